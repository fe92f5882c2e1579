"""``cudalab.patch(model)``: a Hugging Face causal language model run on cudalab's ops, in place,
its weights untouched. For ``LlamaForCausalLM``, ``MistralForCausalLM`` and ``Qwen2ForCausalLM``:
the linear layers on ``cudalab.nn.Linear``, the RMSNorms on ``ops.rms_norm``, the gated MLP on
``ops.swiglu``, rotary embedding on ``ops.rope``, attention on ``ops.attention`` (registered as the
attention implementation "cudalab") and the loss on ``ops.cross_entropy``. For ``GPT2LMHeadModel``:
its Conv1D layers on ``ops.gemm``, LayerNorms on ``ops.layer_norm``, the MLP's bias + GELU fused,
attention and the loss likewise.

Decoding with a cache runs on ``ops.attention_decode`` (the new token against the cache, as
transformers hands them over when no mask is needed). Each replacement steps aside, to the model's
own code, where a case is not one cudalab's op takes: an attention mask (padding), dropout, a
sliding window shorter than the keys of a decoding step (a whole sequence takes its window on
``ops.attention``); rotary angles that differ between the batch's rows; a
norm whose weight's dtype is not its input's. The rotary function is replaced in the model family's
module, so it is patched for every model of that family in the process, as Liger-Kernel does."""

import sys

import torch
import torch.nn.functional as F

from . import nn as cnn
from . import ops

LLAMA_LIKE = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM")
GPT2 = ("GPT2LMHeadModel",)


def _attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """The attention implementation "cudalab": q [batch, heads, seq, head_dim], k and v [batch,
    kv_heads, seq, head_dim]; returns [batch, seq, heads, head_dim] as Hugging Face's do."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    window = kwargs.get("sliding_window")
    whole = query.shape[2] == key.shape[2]  # the whole sequence: no cache before it
    takes = (
        attention_mask is None
        and dropout == 0.0
        and query.shape[2] <= key.shape[2]
        and getattr(module, "is_causal", True)
        and (window is None or whole or key.shape[2] <= window)
        and not kwargs.get("output_attentions", False)
    )
    if not takes:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    if query.shape[2] < key.shape[2]:
        # Decoding with a cache: transformers leaves the mask out only where every query sees every
        # key (one new token, no padding), which is attention_decode's causal rule for it.
        batch, length = query.shape[0], key.shape[2]
        lengths = torch.full((batch,), length, dtype=torch.int32, device=query.device)
        q, k, v = (t.contiguous() for t in (query, key, value))
        o = ops.attention_decode(q, k, v, lengths, scale=scaling, causal=True)[0]
        return o.transpose(1, 2), None
    # q, k and v are read where they lie (the projections' heads transposed): no copies. A window
    # of W keys (transformers': key j seen by query i when j > i - W) is window_size (W - 1, 0).
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (query, key, value))
    window_size = (-1, -1) if window is None else (window - 1, 0)
    o = ops.attention(q, k, v, scale=scaling, causal=True, window_size=window_size)[0]
    return o.transpose(1, 2), None


def _mask(sdpa_mask):
    """transformers' SDPA mask function, but for a sliding window over a whole sequence (no padding,
    no cache): that mask is left out (None), and the attention function applies the window itself
    from its sliding_window argument. Every other case is sdpa_mask's own."""

    def mask(*args, **kwargs):
        q_length = kwargs.get("q_length")
        if q_length is None and kwargs.get("cache_position") is not None:
            q_length = kwargs["cache_position"].shape[0]
        whole = (
            not args
            and kwargs.get("local_size") is not None
            and q_length is not None
            and q_length == kwargs.get("kv_length")
            and not kwargs.get("kv_offset", 0)
            and not kwargs.get("q_offset", 0)
        )
        if whole and sdpa_mask(**{**kwargs, "local_size": None}) is None:
            return None
        return sdpa_mask(*args, **kwargs)

    return mask


def _rope(original):
    """apply_rotary_pos_emb on cudalab's op: cos and sin [1, seq, head_dim] (one set of positions for
    the batch, as Hugging Face builds them from the default position ids) become fp32 tables of
    head_dim / 2 columns; anything else goes to the original function."""

    def apply_rotary_pos_emb(q, k, cos, sin, *args, **kwargs):
        half = q.shape[-1] // 2
        if cos.dim() != 3 or cos.shape[0] != 1 or args or kwargs.get("unsqueeze_dim", 1) != 1 or not q.is_cuda:
            return original(q, k, cos, sin, *args, **kwargs)
        cos_table, sin_table = cos[0, :, :half].float().contiguous(), sin[0, :, :half].float().contiguous()
        return ops.rope(q, cos_table, sin_table, seq_dim=2), ops.rope(k, cos_table, sin_table, seq_dim=2)

    apply_rotary_pos_emb.cudalab_original = original
    return apply_rotary_pos_emb


def _causal_lm_loss(logits, labels, vocab_size, num_items_in_batch=None, ignore_index=-100, shift_labels=None, **_):
    """Hugging Face's ForCausalLMLoss on ops.cross_entropy: labels shifted left by one (the last
    position ignored), a mean over the labels counted, or a sum over num_items_in_batch."""
    if shift_labels is None:
        shift_labels = F.pad(labels, (0, 1), value=ignore_index)[..., 1:]
    rows = logits.reshape(-1, vocab_size)
    targets = shift_labels.reshape(-1).to(rows.device)
    if num_items_in_batch is None:
        return ops.cross_entropy(rows, targets, "mean", ignore_index).float()
    total = ops.cross_entropy(rows, targets, "sum", ignore_index).float()
    return total / num_items_in_batch.to(total.device) if torch.is_tensor(num_items_in_batch) else total / num_items_in_batch


class _RMSNorm:
    """Forward of a Hugging Face RMSNorm (weight, variance_epsilon) on ops.rms_norm."""

    def forward(self, hidden_states):
        if hidden_states.dtype != self.weight.dtype or not hidden_states.is_cuda:
            return super().forward(hidden_states)
        return ops.rms_norm(hidden_states.contiguous(), self.weight, self.variance_epsilon)


class _GatedMlp:
    """Forward of a gated SiLU MLP (gate_proj, up_proj, down_proj) with the gate on ops.swiglu."""

    def forward(self, x):
        return self.down_proj(ops.swiglu(self.gate_proj(x), self.up_proj(x)))


class _Conv1D:
    """Forward of GPT-2's Conv1D (y = x W + b, W stored [in, out]) on ops.gemm: W is B as stored."""

    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1])
        y = ops.gemm(rows, self.weight) + self.bias
        return y.reshape(*x.shape[:-1], self.nf)


class _Gpt2Mlp:
    """Forward of GPT-2's MLP with c_fc's bias and the tanh GELU fused (ops.bias_gelu)."""

    def forward(self, hidden_states):
        rows = hidden_states.reshape(-1, hidden_states.shape[-1])
        h = ops.bias_gelu(ops.gemm(rows, self.c_fc.weight), self.c_fc.bias, "tanh")
        h = self.c_proj(h.reshape(*hidden_states.shape[:-1], -1))
        return self.dropout(h)


def _swap(module, mixin):
    """Gives `module` the forward of `mixin` over its own class (a subclass made once per class)."""
    cls = type(module)
    if getattr(cls, "cudalab_patched", False):
        return
    patched = _swap.classes.get((cls, mixin))
    if patched is None:
        patched = type("Cudalab" + cls.__name__, (mixin, cls), {"cudalab_patched": True})
        _swap.classes[(cls, mixin)] = patched
    module.__class__ = patched


_swap.classes = {}


def patch(model):
    """Runs `model` (a LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM or GPT2LMHeadModel) on
    cudalab's ops from its next forward, in place, and returns it; its state_dict is unchanged.
    Raises ValueError for another model, naming the ones it takes."""
    name = type(model).__name__
    if name not in LLAMA_LIKE + GPT2:
        raise ValueError(f"cudalab.patch: takes {', '.join(LLAMA_LIKE + GPT2)}; got {name}")
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register("cudalab", _attention)
    AttentionMaskInterface.register("cudalab", _mask(sdpa_mask))  # None where the mask is causal alone
    gelu_tanh, silu = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"), ("silu", "swish")
    for module in model.modules():
        kind = type(module).__name__
        if isinstance(module, torch.nn.Linear) and not isinstance(module, cnn.Linear):
            module.__class__ = cnn.Linear  # the same parameters; forward on cudalab's GEMM
        elif kind.endswith("RMSNorm") and hasattr(module, "variance_epsilon"):
            _swap(module, _RMSNorm)
        elif isinstance(module, torch.nn.LayerNorm) and not isinstance(module, cnn.LayerNorm):
            module.__class__ = cnn.LayerNorm
        elif kind == "Conv1D":
            _swap(module, _Conv1D)
        elif kind.endswith("MLP") and hasattr(module, "gate_proj") and getattr(model.config, "hidden_act", "") in silu:
            _swap(module, _GatedMlp)
        elif kind == "GPT2MLP" and model.config.activation_function in gelu_tanh:
            _swap(module, _Gpt2Mlp)
    if name in LLAMA_LIKE:
        family = sys.modules[type(model).__module__]
        if not hasattr(family.apply_rotary_pos_emb, "cudalab_original"):
            family.apply_rotary_pos_emb = _rope(family.apply_rotary_pos_emb)
    model.set_attn_implementation("cudalab")
    model.loss_function = _causal_lm_loss
    return model
