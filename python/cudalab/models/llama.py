"""A Llama-style decoder (pre-norm blocks of RMSNorm, grouped-query attention with rotary position
embedding, a SwiGLU MLP; an untied LM head) built two ways from one parameter layout, Hugging Face's
``LlamaForCausalLM`` state_dict keys (q, k and v, and gate and up, each run as one projection and
saved as Hugging Face's separate ones): ``ops="torch"`` with torch.nn, SDPA and PyTorch's own
RoPE, SwiGLU and cross-entropy; ``ops="cudalab"`` with cudalab.nn.Linear and RMSNorm,
cudalab.ops.rope_packed, attention_packed, swiglu_packed and cross_entropy."""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .. import nn as cnn
from .. import ops


@dataclass
class LlamaConfig:
    layers: int = 4
    d_model: int = 2048
    heads: int = 16
    kv_heads: int = 4
    mlp: int = 5632
    vocab: int = 32000
    seq: int = 2048
    rope_theta: float = 500000.0
    eps: float = 1e-5
    # The cudalab-built model's LM head and loss as ops.linear_cross_entropy, without the logits.
    fused_head: bool = False

    @property
    def head_dim(self):
        return self.d_model // self.heads


def rope_tables(config, device=None):
    """cos and sin of position p times theta^(-2i / head_dim), fp32 [seq, head_dim / 2]."""
    inverse = config.rope_theta ** (-torch.arange(0, config.head_dim, 2, dtype=torch.float64) / config.head_dim)
    angles = torch.arange(config.seq, dtype=torch.float64)[:, None] * inverse[None, :]
    return angles.cos().float().to(device), angles.sin().float().to(device)


def _torch_rope(x, cos, sin):
    """Hugging Face's apply_rotary_pos_emb on x [batch, seq, heads, head_dim], in x's dtype."""
    c = torch.cat((cos, cos), -1)[: x.shape[1], None, :].to(x.dtype)
    s = torch.cat((sin, sin), -1)[: x.shape[1], None, :].to(x.dtype)
    half = x.shape[-1] // 2
    return x * c + torch.cat((-x[..., half:], x[..., :half]), -1) * s


def _stored_as_parts(module, fused, parts):
    """Hugging Face's state_dict keys for projections that share their input and run as one Linear:
    ``module.<fused>``'s output rows are the parts' in order, and it saves and loads as the Linears
    ``(name, rows)`` of `parts` (its weight split, or theirs concatenated), in their place."""
    names, rows = [name for name, _ in parts], [count for _, count in parts]

    def save(module, state_dict, prefix, local_metadata):
        key = prefix + fused + ".weight"
        keys = list(state_dict)
        later = [(k, state_dict.pop(k)) for k in keys[keys.index(key) + 1 :]]
        for name, part in zip(names, state_dict.pop(key).split(rows)):
            state_dict[prefix + name + ".weight"] = part
        state_dict.update(later)

    def load(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        keys = [prefix + name + ".weight" for name in names]
        if all(k in state_dict for k in keys):
            state_dict[prefix + fused + ".weight"] = torch.cat([state_dict.pop(k) for k in keys])

    module.register_state_dict_post_hook(save)
    module.register_load_state_dict_pre_hook(load)


class Attention(torch.nn.Module):
    """q, k and v from one projection (saved as q_proj, k_proj and v_proj): one GEMM forward, and
    one for x's gradient backward, where three would need their gradients added."""

    def __init__(self, config, use_cudalab):
        super().__init__()
        linear = cnn.Linear if use_cudalab else torch.nn.Linear
        d, hd = config.d_model, config.head_dim
        self.heads, self.kv_heads, self.head_dim, self.use_cudalab = config.heads, config.kv_heads, hd, use_cudalab
        q_rows, kv_rows = config.heads * hd, config.kv_heads * hd
        self.qkv_proj = linear(d, q_rows + 2 * kv_rows, bias=False)
        self.o_proj = linear(q_rows, d, bias=False)
        _stored_as_parts(self, "qkv_proj", [("q_proj", q_rows), ("k_proj", kv_rows), ("v_proj", kv_rows)])

    def forward(self, x, cos, sin, cache=None, start=0):
        """x's tokens at positions start.. With `cache` (this layer's k and v, [batch, kv_heads,
        positions, head_dim]) their keys and values are written there and the queries attend to every
        cached position up to theirs: a whole prompt at start 0, then one token a step."""
        b, s, _ = x.shape
        qkv = self.qkv_proj(x)
        if self.use_cudalab:
            # q's and k's heads rotated where they lie; with no cache, straight into attention.
            qkv = ops.rope_packed(qkv, cos, sin, self.heads, self.kv_heads, position_offset=start)
            if cache is None and start == 0:
                return self.o_proj(ops.attention_packed(qkv, self.heads, self.kv_heads, causal=True)[0])
        q, k, v = qkv.view(b, s, -1, self.head_dim).split([self.heads, self.kv_heads, self.kv_heads], 2)
        if not self.use_cudalab:
            q, k = _torch_rope(q, cos[start:], sin[start:]), _torch_rope(k, cos[start:], sin[start:])
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            if start > 0 and s != 1:
                raise ValueError("cudalab.models.Llama: after the prompt, the cache takes one token a step")
            cache[0][:, :, start : start + s] = k
            cache[1][:, :, start : start + s] = v
            k, v = cache[0][:, :, : start + s], cache[1][:, :, : start + s]
        if start > 0 and self.use_cudalab and cache is not None:
            # One query against the whole preallocated cache, of which start + 1 positions are filled.
            lengths = torch.full((b,), start + s, dtype=torch.int32, device=x.device)
            o = ops.attention_decode(q.contiguous(), cache[0], cache[1], lengths)[0]
        elif start > 0:
            o = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        elif self.use_cudalab:
            # The prompt with a cache: q's heads read where they lie in qkv, and o comes back [b, s,
            # heads, head_dim] transposed: the reshape below is a view.
            o = ops.attention(q, k, v, causal=True)[0]
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(o.transpose(1, 2).reshape(b, s, -1))


class Mlp(torch.nn.Module):
    """gate and up from one projection (saved as gate_proj and up_proj), its output [.., 2 * mlp]
    taken whole by cudalab's swiglu_packed."""

    def __init__(self, config, use_cudalab):
        super().__init__()
        linear = cnn.Linear if use_cudalab else torch.nn.Linear
        self.use_cudalab = use_cudalab
        self.gate_up_proj = linear(config.d_model, 2 * config.mlp, bias=False)
        self.down_proj = linear(config.mlp, config.d_model, bias=False)
        _stored_as_parts(self, "gate_up_proj", [("gate_proj", config.mlp), ("up_proj", config.mlp)])

    def forward(self, x):
        gate_up = self.gate_up_proj(x)
        if self.use_cudalab:
            return self.down_proj(ops.swiglu_packed(gate_up))
        gate, up = gate_up.chunk(2, -1)
        return self.down_proj(F.silu(gate) * up)


class DecoderLayer(torch.nn.Module):
    def __init__(self, config, use_cudalab):
        super().__init__()
        norm = cnn.RMSNorm if use_cudalab else torch.nn.RMSNorm
        self.input_layernorm = norm(config.d_model, eps=config.eps)
        self.self_attn = Attention(config, use_cudalab)
        self.post_attention_layernorm = norm(config.d_model, eps=config.eps)
        self.mlp = Mlp(config, use_cudalab)

    def forward(self, x, cos, sin, cache=None, start=0, residual=None):
        """As gpt.Block: the stream `residual` + `x` in, this layer's MLP output and the stream
        before it out (the adds run inside the next RMSNorm)."""
        y, residual = cnn.add_and_norm(self.input_layernorm, x, residual)
        y, residual = cnn.add_and_norm(self.post_attention_layernorm, self.self_attn(y, cos, sin, cache, start), residual)
        return self.mlp(y), residual


class LlamaModel(torch.nn.Module):
    def __init__(self, config, use_cudalab):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(config.vocab, config.d_model)
        self.layers = torch.nn.ModuleList(DecoderLayer(config, use_cudalab) for _ in range(config.layers))
        self.norm = (cnn.RMSNorm if use_cudalab else torch.nn.RMSNorm)(config.d_model, eps=config.eps)


class Llama(torch.nn.Module):
    def __init__(self, config, ops="cudalab"):
        super().__init__()
        if ops not in ("cudalab", "torch"):
            raise ValueError(f"cudalab.models.Llama: ops must be 'cudalab' or 'torch', got {ops!r}")
        self.config, self.use_cudalab = config, ops == "cudalab"
        self.model = LlamaModel(config, self.use_cudalab)
        self.lm_head = (cnn.Linear if self.use_cudalab else torch.nn.Linear)(config.d_model, config.vocab, bias=False)
        cos, sin = rope_tables(config)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        generator = torch.Generator().manual_seed(0)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, 0.0, 0.02, generator=generator)

    def _apply(self, fn, recurse=True):
        # The angle tables stay fp32 when the model is cast (model.to(torch.bfloat16)).
        cos, sin = self.rope_cos, self.rope_sin
        super()._apply(fn, recurse)
        self.rope_cos, self.rope_sin = cos.to(self.rope_cos.device), sin.to(self.rope_sin.device)
        return self

    def hidden(self, tokens, caches=None, start=0):
        """The final norm's output for `tokens` at positions start.. (with `caches`, one (k, v) per
        layer, written and read as Attention.forward says)."""
        x, residual = self.model.embed_tokens(tokens), None
        for i, layer in enumerate(self.model.layers):
            x, residual = layer(
                x, self.rope_cos, self.rope_sin, caches[i] if caches is not None else None, start, residual
            )
        return cnn.add_and_norm(self.model.norm, x, residual)[0]

    @torch.no_grad()
    def generate(self, prompt, new_tokens):
        """Greedy decoding with a key-value cache: `prompt` [batch, length] and the `new_tokens`
        tokens chosen after it, [batch, length + new_tokens]. The prompt runs as one sequence, then
        one token a step; length + new_tokens must fit the rotary tables (config.seq)."""
        batch, length = prompt.shape
        total = length + new_tokens
        if new_tokens < 0 or total > self.config.seq:
            raise ValueError(
                f"cudalab.models.Llama.generate: the prompt ({length}) and new tokens ({new_tokens}) must fit "
                f"{self.config.seq} positions"
            )
        weight = self.lm_head.weight
        shape = (batch, self.config.kv_heads, total, self.config.head_dim)
        caches = [(weight.new_empty(shape), weight.new_empty(shape)) for _ in self.model.layers]
        tokens, start, step = [prompt], 0, prompt
        for _ in range(new_tokens):
            h = self.hidden(step, caches, start)
            start += step.shape[1]
            step = self.lm_head(h[:, -1:].contiguous()).argmax(-1)
            tokens.append(step)
        return torch.cat(tokens, 1)

    def forward(self, tokens, targets):
        h = self.hidden(tokens)
        if self.use_cudalab and self.config.fused_head:
            return ops.linear_cross_entropy(h, self.lm_head.weight, targets)
        logits = self.lm_head(h).reshape(-1, self.config.vocab)
        if self.use_cudalab:
            return ops.cross_entropy(logits, targets.reshape(-1))
        return F.cross_entropy(logits, targets.reshape(-1))
