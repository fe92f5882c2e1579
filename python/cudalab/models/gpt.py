"""A GPT-2-style decoder (pre-norm blocks of causal self-attention and a GELU MLP, tied LM head)
built two ways from one parameter layout: ``ops="torch"`` with torch.nn and SDPA, ``ops="cudalab"``
with cudalab.nn.Linear and LayerNorm (each residual add inside the next norm), cudalab.ops.attention
and the fused bias + GELU."""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .. import nn as cnn
from .. import ops


@dataclass
class GptConfig:
    layers: int = 8
    d_model: int = 1024
    head_dim: int = 128
    vocab: int = 50304
    seq: int = 1024
    # The cudalab-built model's LM head and loss as ops.linear_cross_entropy, without the logits.
    fused_head: bool = False

    @property
    def heads(self):
        return self.d_model // self.head_dim


class Block(torch.nn.Module):
    def __init__(self, config, use_cudalab):
        super().__init__()
        d, self.heads, self.use_cudalab = config.d_model, config.heads, use_cudalab
        linear = cnn.Linear if use_cudalab else torch.nn.Linear
        norm = cnn.LayerNorm if use_cudalab else torch.nn.LayerNorm
        self.ln1, self.ln2 = norm(d), norm(d)
        self.qkv, self.proj = linear(d, 3 * d), linear(d, d)
        # The MLP's first bias is a parameter of its own, added with the GELU.
        self.fc, self.fc_bias = linear(d, 4 * d, bias=False), torch.nn.Parameter(torch.zeros(4 * d))
        self.out = linear(4 * d, d)

    def attention(self, x):
        b, s, d = x.shape
        if self.use_cudalab:
            # The heads are read from the projection's output where they lie, and o comes back
            # [b, s, d]: no copies around the kernels, either way.
            return self.proj(ops.attention_packed(self.qkv(x), self.heads, causal=True)[0])
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(o.transpose(1, 2).reshape(b, s, d))

    def mlp(self, x):
        if self.use_cudalab:  # the GELU and its derivative in the GEMMs' epilogues
            return ops.mlp(x, self.fc.weight, self.fc_bias, self.out.weight, self.out.bias, "gelu_tanh")
        return self.out(F.gelu(self.fc(x) + self.fc_bias, approximate="tanh"))

    def forward(self, x, residual=None):
        """The block on the residual stream `residual` + `x` (the last branch's output, not yet
        added; `residual` None for the first block): returns this block's MLP output and the
        stream before it, so each add runs inside the next norm (cudalab's add_layer_norm)."""
        y, residual = cnn.add_and_norm(self.ln1, x, residual)
        y, residual = cnn.add_and_norm(self.ln2, self.attention(y), residual)
        return self.mlp(y), residual


class Gpt(torch.nn.Module):
    def __init__(self, config, ops="cudalab"):
        super().__init__()
        if ops not in ("cudalab", "torch"):
            raise ValueError(f"cudalab.models.Gpt: ops must be 'cudalab' or 'torch', got {ops!r}")
        use_cudalab = ops == "cudalab"
        self.config, self.use_cudalab = config, use_cudalab
        self.embed = torch.nn.Embedding(config.vocab, config.d_model)
        self.position = torch.nn.Embedding(config.seq, config.d_model)
        self.blocks = torch.nn.ModuleList(Block(config, use_cudalab) for _ in range(config.layers))
        self.ln_f = (cnn.LayerNorm if use_cudalab else torch.nn.LayerNorm)(config.d_model)
        self.head = (cnn.Linear if use_cudalab else torch.nn.Linear)(config.d_model, config.vocab, bias=False)
        self.head.weight = self.embed.weight  # tied
        generator = torch.Generator().manual_seed(0)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, 0.0, 0.02, generator=generator)
            elif "ln" not in name:
                torch.nn.init.zeros_(p)

    def forward(self, tokens, targets):
        x = self.embed(tokens) + self.position(torch.arange(tokens.shape[1], device=tokens.device))
        residual = None
        for block in self.blocks:
            x, residual = block(x, residual)
        h, _ = cnn.add_and_norm(self.ln_f, x, residual)
        if self.use_cudalab and self.config.fused_head:
            return ops.linear_cross_entropy(h, self.head.weight, targets)
        logits = self.head(h).reshape(-1, self.config.vocab)
        if self.use_cudalab:
            return ops.cross_entropy(logits, targets.reshape(-1))
        return F.cross_entropy(logits, targets.reshape(-1))
