"""Attention, forward and backward, against PyTorch's SDPA with one backend forced at a time, and the
float64 references (computed on the GPU in chunks) both are checked against."""

import math
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ... import ops
from .common import COMPILE_TECHNIQUE, Case, Variant, backward, forward, normal

# Relative L2 of attention's O against float64. The 16-bit kernels (cudalab's and SDPA's) round two
# things: the probabilities P to the input type before P V, and O at the end; each rounding is a
# relative error of at most u (2^-8 bf16, 2^-11 f16) that the weighted sum over keys does not
# amplify (error and O average over the same weights), so rel L2 stays below sqrt(2) u / sqrt(3):
# 3.2e-3 bf16, 4.0e-4 f16 (Q K^T's products are exact in fp32). Emulating the two roundings in
# float64 on normal inputs gives 1.7-2.3e-3 bf16 and 2.1-2.9e-4 f16 at seq 17 to 4096 (worst row
# 1.4x that). The bounds leave 3x (bf16) and 5x (f16) above the estimate; a wrong mask, scale or tile
# gives errors of order 1. fp32 (CUDA cores, fp32 exp and sums): 1e-5. The log-sum-exp is fp32
# arithmetic on exact products whatever the dtype: 1e-5.
ATTENTION_REL_L2 = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-5}
ATTENTION_LSE_REL_L2 = 1e-5
# The largest seq the SDPA math backend runs at: it materializes batch x heads x seq^2 scores.
SDPA_MATH_MAX_SEQ = 2048
SDPA_BACKENDS = [  # (variant, backend, technique)
    (
        "sdpa_flash",
        SDPBackend.FLASH_ATTENTION,
        "F.scaled_dot_product_attention, FLASH_ATTENTION forced (FlashAttention-2)",
    ),
    ("sdpa_efficient", SDPBackend.EFFICIENT_ATTENTION, "F.scaled_dot_product_attention, EFFICIENT_ATTENTION forced"),
    ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION, "F.scaled_dot_product_attention, CUDNN_ATTENTION forced (cuDNN)"),
    (
        "sdpa_math",
        SDPBackend.MATH,
        "F.scaled_dot_product_attention, MATH forced: matmul, softmax, matmul over the materialized scores, in "
        "fp32 for 16-bit inputs (torch's default; TF32 off)",
    ),
]


def window_mask(queries, seq, causal, window, device):
    """True where query i (of the rows `queries`) does not see key j of seq: after it when causal, more
    than window = (left, right) before or after it where a side is not -1."""
    query = torch.arange(queries.start, queries.stop, device=device)[:, None]
    offset = torch.arange(seq, device=device)[None, :] - query
    left, right = window
    right = 0 if causal else right
    hidden = torch.zeros_like(offset, dtype=torch.bool)
    if right >= 0:
        hidden |= offset > right
    if left >= 0:
        hidden |= offset < -left
    return hidden


def attention_score_chunks(q, k, v, scale, causal, max_scores, window=(-1, -1)):
    """The float64 scaled, masked scores of attention over q [B, H, S, D] and k, v [B, Hkv, S, D] (query
    head h reads kv head h // (H // Hkv)), the causal mask and a sliding window (window_mask) applied,
    on q's device, a few (batch, head) slices and a chunk of their
    query rows at a time, so that at most max_scores float64 scores exist at once (2^27: 1 GiB; one
    slice at seq 16384 would be 2 GiB). Yields (index, kv_index, rows, queries, keys, values, scores):
    the slices' indices among the B * H query slices and the B * Hkv kv slices, the rows (a slice),
    and those rows of q, the slices' k and v, and the scores [slices, rows, S], all float64."""
    batch, heads, seq, head_dim = q.shape
    kv_heads = k.shape[1]
    group = heads // kv_heads if kv_heads else 1
    q_slices = q.reshape(batch * heads, seq, head_dim)
    k_slices, v_slices = (t.reshape(batch * kv_heads, seq, head_dim) for t in (k, v))
    slices_at_once = max(1, max_scores // max(1, seq * seq))
    rows_at_once = max(1, min(seq, max_scores // max(1, seq)))
    for first in range(0, batch * heads, slices_at_once):
        index = torch.arange(first, min(first + slices_at_once, batch * heads), device=q.device)
        kv_index = index // heads * kv_heads + index % heads // group
        keys, values = k_slices[kv_index].double(), v_slices[kv_index].double()
        for row in range(0, seq, rows_at_once):
            rows = slice(row, min(row + rows_at_once, seq))
            queries = q_slices[index, rows].double()
            scores = queries @ keys.mT * scale
            if causal or window != (-1, -1):
                scores.masked_fill_(window_mask(rows, seq, causal, window, q.device), -math.inf)
            yield index, kv_index, rows, queries, keys, values, scores


def attention_reference(q, k, v, scale=None, causal=False, max_scores=1 << 27, window=(-1, -1)):
    """float64 (O, L) of attention over q [B, H, S, D] and k, v [B, Hkv, S, D] (query head h reads kv
    head h // (H // Hkv)), on q's device: O = softmax(scale * q k^T [causal, window mask]) v and L each
    row's log-sum-exp, over attention_score_chunks (at most max_scores float64 scores at once)."""
    batch, heads, seq, head_dim = q.shape
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    o = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.empty(q.shape[:-1], dtype=torch.float64, device=q.device)
    o_slices, lse_slices = o.view(batch * heads, seq, head_dim), lse.view(batch * heads, seq)
    for index, _, rows, _, _, values, scores in attention_score_chunks(q, k, v, scale, causal, max_scores, window):
        row_lse = torch.logsumexp(scores, -1)
        o_slices[index, rows] = torch.exp(scores - row_lse[..., None]) @ values
        lse_slices[index, rows] = row_lse
    return o, lse


def decode_reference(q, k, v, lengths, causal=True, window=(-1, -1)):
    """float64 (O, L) of decode attention: q [B, H, T, D], each sequence's T newest queries, against
    its first lengths[b] rows of k, v [B, Hkv, S, D] (query head h reads kv head h // (H // Hkv)),
    the causal mask aligned bottom-right (query t sits at position lengths[b] - T + t) and a sliding
    window about that position (window_mask)."""
    batch, heads, tokens, head_dim = q.shape
    group = heads // k.shape[1]
    o = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.empty(q.shape[:-1], dtype=torch.float64, device=q.device)
    for b, length in enumerate(lengths.tolist()):
        keys = k[b, :, :length].double().repeat_interleave(group, 0)
        values = v[b, :, :length].double().repeat_interleave(group, 0)
        scores = q[b].double() @ keys.mT / math.sqrt(head_dim)
        if causal or window != (-1, -1):
            positions = range(length - tokens, length)
            scores = scores.masked_fill(window_mask(positions, length, causal, window, q.device), -math.inf)
        lse[b] = torch.logsumexp(scores, -1)
        o[b] = torch.exp(scores - lse[b][..., None]) @ values
    return o, lse


def varlen_reference(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=False, window=(-1, -1), scale=None, dtype=None):
    """(O, L) of a variable-length batch (ops.attention_varlen's layout: q [total_q, H, D], k, v
    [total_k, Hkv, D], int32 cumulative lengths), one sequence at a time, with autograd: in float64
    by default, or with q K^T, the probabilities and P V rounded to `dtype` as a plain 16-bit
    implementation would. A sequence's queries are its last positions (query i at i + keys -
    queries), the causal mask and window_mask about them; a query that sees no key gets O = 0 and
    L = -inf."""
    dtype = dtype or torch.float64
    accumulate = torch.float64 if dtype == torch.float64 else torch.float32
    heads, head_dim = q.shape[1], q.shape[2]
    group = heads // k.shape[1]
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    outputs, lses = [], []
    for (q0, q1), (k0, k1) in zip(
        zip(cu_seqlens_q.tolist(), cu_seqlens_q.tolist()[1:]), zip(cu_seqlens_k.tolist(), cu_seqlens_k.tolist()[1:])
    ):
        queries = q[q0:q1].to(dtype).transpose(0, 1)
        keys = k[k0:k1].to(dtype).transpose(0, 1).repeat_interleave(group, 0)
        values = v[k0:k1].to(dtype).transpose(0, 1).repeat_interleave(group, 0)
        scores = (queries @ keys.mT).to(accumulate) * scale
        length = k1 - k0
        positions = range(length - (q1 - q0), length)
        if causal or window != (-1, -1):
            scores = scores.masked_fill(window_mask(positions, length, causal, window, q.device), -math.inf)
        lse = torch.logsumexp(scores, -1)
        seen = torch.isfinite(lse)[..., None]
        p = torch.where(seen, torch.exp(scores - torch.where(seen, lse[..., None], 0.0)), 0.0)
        outputs.append((p.to(dtype) @ values).to(accumulate).transpose(0, 1))
        lses.append(lse)
    return torch.cat(outputs, 0), torch.cat(lses, -1)


def attention_backward_reference(q, k, v, dy, scale=None, causal=False, max_scores=1 << 27, window=(-1, -1)):
    """float64 (dQ, dK, dV) of attention's O for O's gradient dy [B, H, S, D], over
    attention_score_chunks: P = softmax(scores), dP = dy V^T, D = rowsum(dy o P V), dS = P o (dP - D),
    dQ = scale dS K, dK = scale dS^T Q and dV = P^T dy, each kv head's dK and dV summed over the query
    heads that read it."""
    batch, heads, seq, head_dim = q.shape
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    dq = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    dk, dv = (torch.zeros(k.shape, dtype=torch.float64, device=q.device) for _ in range(2))
    dq_slices, dy_slices = dq.view(batch * heads, seq, head_dim), dy.reshape(batch * heads, seq, head_dim)
    dk_slices, dv_slices = (t.view(batch * k.shape[1], seq, head_dim) for t in (dk, dv))
    for index, kv_index, rows, queries, keys, values, scores in attention_score_chunks(
        q, k, v, scale, causal, max_scores, window
    ):
        p = torch.softmax(scores, -1)
        grad = dy_slices[index, rows].double()
        ds = p * (grad @ values.mT - (grad * (p @ values)).sum(-1, keepdim=True))
        dq_slices[index, rows] = scale * ds @ keys
        dk_slices.index_add_(0, kv_index, scale * ds.mT @ queries)
        dv_slices.index_add_(0, kv_index, p.mT @ grad)
    return dq, dk, dv


def sdpa(backend, causal, wrap=forward):
    """A variant running F.scaled_dot_product_attention with only `backend` allowed, made runnable by
    wrap (forward, or backward with the leaves to differentiate: the backend that runs the forward
    runs its backward); a case the backend refuses is a skip with its reason (sdpa_refusal)."""

    def attend(q, k, v, **_):  # decode's cache lengths: its cases fill every cache, so SDPA needs no mask
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=k.shape[1] != q.shape[1])

    return sdpa_refusal(wrap(attend), f"SDPA's {backend.name} backend")


def sdpa_refusal(prepare_variant, what):
    """prepare_variant run once, a refusal (RuntimeError: "No available kernel", with warnings that
    say why) raised as one line naming `what`, which run_case records as the skip reason."""

    def prepare(inputs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                run = prepare_variant(inputs)
                run()
            except RuntimeError as error:
                why = " ".join(" ".join(str(w.message).split()) for w in caught) or " ".join(str(error).split())
                raise RuntimeError(f"{what} refuses this case: {why}"[:400]) from None
        return run

    return prepare


def attention_variants(batch, heads, seq, causal, wrap, cudalab_technique, cudalab):
    """SDPA's backends (math left out above SDPA_MATH_MAX_SEQ), the compile row (not timed) and
    cudalab's op, each made runnable by wrap (forward, or backward with the leaves)."""
    variants = []
    for name, backend, technique in SDPA_BACKENDS:
        if backend == SDPBackend.MATH and seq > SDPA_MATH_MAX_SEQ:
            gib = batch * heads * seq * seq * 4 / 2**30
            why = (
                f"not run above seq {SDPA_MATH_MAX_SEQ}: the math backend materializes the batch x heads x seq^2 "
                f"scores ({gib:.0f} GiB in fp32 here), so it times that matrix's traffic, not attention; it stands "
                "in the shorter sequences as the unfused composition"
            )
            variants.append(Variant(name, technique, None, why))
        else:
            variants.append(Variant(name, technique, sdpa(backend, causal, wrap)))
    variants.append(
        Variant(
            "compile",
            COMPILE_TECHNIQUE,
            None,
            "not timed: torch.compile hands F.scaled_dot_product_attention to the same SDPA kernels the sdpa_* "
            "rows time (there is nothing around it to fuse)",
        )
    )
    variants.append(Variant("cudalab", cudalab_technique, wrap(cudalab)))
    return variants


def attention_case(dtype, batch, heads, seq, head_dim, causal):
    def make_inputs(g):
        return {name: normal(g, (batch, heads, seq, head_dim), dtype, 1.0, 0.0) for name in ("q", "k", "v")}

    variants = attention_variants(
        batch,
        heads,
        seq,
        causal,
        forward,
        "cudalab.ops.attention: the library's kernel for the shape (O and the log-sum-exp; SDPA's public "
        "API returns O only, so only cudalab's L is checked)",
        lambda q, k, v: ops.attention(q, k, v, causal=causal),
    )
    return dense_case(False, dtype, batch, heads, seq, head_dim, causal, make_inputs, variants)


def dense_case(backward_only, dtype, batch, heads, seq, head_dim, causal, make_inputs, variants):
    """The Case of attention's forward over [batch, heads, seq, head_dim] (every head its own kv head),
    or with backward_only its backward, checked against the float64 references."""
    dims = [("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", head_dim)]
    params = [("causal", int(causal)), ("kv_heads", 0)]
    if not backward_only:
        reference = lambda inputs: attention_reference(**inputs, causal=causal)  # noqa: E731
        tolerance = (ATTENTION_REL_L2[dtype], ATTENTION_LSE_REL_L2)
        return Case("attention", dims, dtype, params, make_inputs, reference, variants, tolerance, engine="by_dtype")
    # The gradients carry the forward's two roundings (P, or dS, to the dtype before the product that
    # takes it, and the output's), so the same estimate; twice the bound, as every other gradient
    # here has (one more fp32 reduction before the rounding).
    reference = lambda inputs: attention_backward_reference(**inputs, causal=causal)  # noqa: E731
    tolerance = 2 * ATTENTION_REL_L2[dtype]
    return Case("attention_backward", dims, dtype, params, make_inputs, reference, variants, tolerance, engine="by_dtype")


def attention_backward_case(dtype, batch, heads, seq, head_dim, causal):
    """The backward alone: each variant's forward runs once outside the timing (backward()), then
    every sample differentiates its graph again for dy, as training would. q, k, v and dy standard
    normal."""

    def make_inputs(g):
        return {name: normal(g, (batch, heads, seq, head_dim), dtype, 1.0, 0.0) for name in ("q", "k", "v", "dy")}

    variants = attention_variants(
        batch,
        heads,
        seq,
        causal,
        lambda fn: backward(fn, ["q", "k", "v"]),
        "autograd of cudalab.ops.attention: cudalab::attention_backward, the library's kernel for the shape "
        "(from the saved q, k, v, O and L)",
        lambda q, k, v: ops.attention(q, k, v, causal=causal)[0],
    )
    variants.append(
        Variant(
            "cudalab_deterministic",
            "the same under torch.use_deterministic_algorithms(True): dQ's parts added one key block at a time "
            "in a fixed order (without a mask, the order the key blocks' staggered walks reach each tile in)",
            under_deterministic_algorithms(
                backward(lambda q, k, v: ops.attention(q, k, v, causal=causal)[0], ["q", "k", "v"])
            ),
        )
    )
    return dense_case(True, dtype, batch, heads, seq, head_dim, causal, make_inputs, variants)


def under_deterministic_algorithms(prepare_variant):
    """prepare_variant whose every run happens under torch.use_deterministic_algorithms(True)."""

    def prepare(inputs):
        run = prepare_variant(inputs)

        def deterministic_run():
            torch.use_deterministic_algorithms(True)
            try:
                return run()
            finally:
                torch.use_deterministic_algorithms(False)

        return deterministic_run

    return prepare


def attention_cases(quick):
    """Attention's forward against SDPA's backends, q, k and v standard normal: a sweep of seq 256 to
    32768 at head_dim 64 and 128, causal and not, at batch x seq = 16384 (one sequence at 32768), 16
    heads, bf16; head_dim 256 at seq 512, 2048 and 8192 and head_dim 96 (Phi's; on the head_dim 128
    kernel) at 1024 and 4096, causal and not; and f16 [4, 16, 4096, 128]. The backward alone,
    against each backend's backward: bf16, seq 1024 to 16384 at head_dim 64 and 128 and seq 1024
    and 4096 at head_dim 96, causal and not, at batch x seq = 16384. --quick: the same kinds at [2,
    4, 512, D]."""
    if quick:
        shapes = [(torch.bfloat16, 2, 4, 512, 128, False), (torch.bfloat16, 2, 4, 512, 128, True)]
        backward_shapes = shapes + [(torch.bfloat16, 2, 4, 512, 64, False)]
        shapes += [(torch.bfloat16, 2, 4, 512, 64, False), (torch.float16, 2, 4, 512, 128, False)]
    else:
        backward_shapes = [
            (torch.bfloat16, 16384 // seq, 16, seq, head_dim, causal)
            for head_dim in (128, 64)
            for seq in (1024, 2048, 4096, 8192, 16384)
            for causal in (False, True)
        ]
        backward_shapes += [
            (torch.bfloat16, 16384 // seq, 16, seq, 96, causal) for seq in (1024, 4096) for causal in (False, True)
        ]
        shapes = [
            (torch.bfloat16, max(16384 // seq, 1), 16, seq, head_dim, causal)
            for head_dim in (128, 64)
            for seq in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
            for causal in (False, True)
        ]
        for head_dim, seqs in ((256, (512, 2048, 8192)), (96, (1024, 4096))):
            for seq in seqs:
                shapes += [(torch.bfloat16, 16384 // seq, 16, seq, head_dim, causal) for causal in (False, True)]
        shapes += [(torch.float16, 4, 16, 4096, 128, False)]
    return [attention_case(*shape) for shape in shapes] + [attention_backward_case(*s) for s in backward_shapes]


def varlen_case(dtype, sequences, heads, seq, head_dim, causal, backward_only=False):
    """A variable-length batch of `sequences` sequences of seq tokens each: equal lengths, so that it
    is the dense problem [sequences, heads, seq, head_dim] and every row times the same work. q, k
    and v lie as a projection gives them, [sequences, seq, heads, head_dim] (the dense rows read
    them transposed, in place; the packed rows as [sequences * seq, heads, head_dim], a view). Rows:
    SDPA's backends and cudalab's dense op on the batch, SDPA on nested (jagged) tensors (PyTorch's
    variable-length path: FlashAttention-2's varlen kernel), and ops.attention_varlen; its forward,
    or with backward_only its backward alone."""
    tokens = sequences * seq

    def make_inputs(g):
        names = ("q", "k", "v", "dy") if backward_only else ("q", "k", "v")
        return {
            name: normal(g, (sequences, seq, heads, head_dim), dtype, 1.0, 0.0).transpose(1, 2) for name in names
        }

    lengths = {}  # the cumulative lengths, made on the GPU at the first call (the cases are built anywhere)

    def cumulative(device, dtype):
        if dtype not in lengths:
            lengths[dtype] = torch.arange(0, tokens + 1, seq, dtype=dtype, device=device)
        return lengths[dtype]

    def packed(t):
        return t.transpose(1, 2).reshape(tokens, heads, head_dim)

    def dense(o):  # a packed [tokens, heads, head_dim] output as [sequences, heads, seq, head_dim], a view
        return o.view(sequences, seq, heads, head_dim).transpose(1, 2)

    def cudalab_varlen(q, k, v):
        cu_seqlens = cumulative(q.device, torch.int32)
        o, lse = ops.attention_varlen(packed(q), packed(k), packed(v), cu_seqlens, cu_seqlens, seq, seq, causal=causal)
        return dense(o) if backward_only else (dense(o), lse.view(heads, sequences, seq).transpose(0, 1))

    def jagged(q, k, v):
        # The lengths given, so that building the nested tensors reads nothing back from the GPU.
        offsets = cumulative(q.device, torch.int64)
        nested = [
            torch.nested.nested_tensor_from_jagged(packed(t), offsets, min_seqlen=seq, max_seqlen=seq).transpose(1, 2)
            for t in (q, k, v)
        ]
        return dense(F.scaled_dot_product_attention(*nested, is_causal=causal).transpose(1, 2).values())

    wrap = (lambda fn: backward(fn, ["q", "k", "v"])) if backward_only else forward
    dense_cudalab = (lambda q, k, v: ops.attention(q, k, v, causal=causal)[0]) if backward_only else (
        lambda q, k, v: ops.attention(q, k, v, causal=causal)
    )
    variants = attention_variants(
        sequences, heads, seq, causal, wrap, "cudalab.ops.attention on the dense batch", dense_cudalab
    )
    variants.append(
        Variant(
            "sdpa_jagged",
            "F.scaled_dot_product_attention on nested jagged tensors (torch.nested, offsets as cu_seqlens): "
            "PyTorch's variable-length path",
            sdpa_refusal(wrap(jagged), "SDPA on nested jagged tensors"),
        )
    )
    variants.append(
        Variant(
            "cudalab_varlen",
            "cudalab.ops.attention_varlen on the packed rows (cu_seqlens), the Hopper kernel's variable-length form",
            wrap(cudalab_varlen),
        )
    )
    return dense_case(backward_only, dtype, sequences, heads, seq, head_dim, causal, make_inputs, variants)


def varlen_cases(quick):
    """Variable-length batches of equal lengths against the dense batch (bf16, causal, as training
    packs documents): GPT-2's and Llama's short sequences and a long one, forward and backward.
    --quick: 2 x 4 x 512 x 128."""
    if quick:
        shapes = [(torch.bfloat16, 2, 4, 512, 128, True)]
    else:
        shapes = [
            (torch.bfloat16, 16, 12, 1024, 64, True),
            (torch.bfloat16, 32, 16, 512, 128, True),
            (torch.bfloat16, 16, 16, 1024, 128, True),
            (torch.bfloat16, 4, 32, 4096, 128, True),
        ]
    return [varlen_case(*shape) for shape in shapes] + [varlen_case(*shape, backward_only=True) for shape in shapes]


def window_case(dtype, batch, heads, kv_heads, seq, head_dim, left, backward_only=False):
    """Causal attention with a sliding window of left + 1 keys (Mistral's window of W keys is left = W
    - 1): its forward, or with backward_only its backward alone, against the two ways PyTorch
    runs a window, SDPA with the window as a boolean mask (its own choice of backend) and
    FlexAttention with a sliding-window block mask under torch.compile (the blocks outside the window
    skipped), and cudalab's op with window_size=(left, 0). q, k and v (and dy) standard normal."""
    window = (left, 0)
    leaves = ["q", "k", "v"]
    wrapped = (lambda fn: backward(fn, leaves)) if backward_only else forward

    def make_inputs(g):
        shapes = {"q": heads, "k": kv_heads, "v": kv_heads} | ({"dy": heads} if backward_only else {})
        return {name: normal(g, (batch, h, seq, head_dim), dtype, 1.0, 0.0) for name, h in shapes.items()}

    def masked_sdpa(inputs):
        visible = ~window_mask(range(seq), seq, True, window, "cuda")
        return wrapped(
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=visible, enable_gqa=kv_heads != heads)
        )(inputs)

    def flex(inputs):
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        def sliding(b, h, q_idx, kv_idx):
            return (kv_idx <= q_idx) & (q_idx - kv_idx <= left)

        block_mask = create_block_mask(sliding, None, None, seq, seq, device="cuda")
        compiled = torch.compile(flex_attention, fullgraph=True)
        return wrapped(lambda q, k, v: compiled(q, k, v, block_mask=block_mask, enable_gqa=kv_heads != heads))(inputs)

    def ours(q, k, v):
        o, lse = ops.attention(q, k, v, causal=True, window_size=window)
        return o if backward_only else (o, lse)

    variants = [
        Variant(
            "sdpa_mask",
            "F.scaled_dot_product_attention with the window as a boolean attn_mask, its own choice of backend "
            "(every key tile computed, the mask applied to the scores)",
            masked_sdpa,
        ),
        Variant(
            "flex_attention",
            "torch.nn.attention.flex_attention with a sliding-window block mask (blocks outside the window skipped), "
            "torch.compile(fullgraph=True)",
            flex,
        ),
        Variant(
            "cudalab",
            "cudalab.ops.attention(causal=True, window_size=(left, 0)): the library's kernel, the key tiles outside "
            "the window skipped" + (", and its autograd's backward" if backward_only else ""),
            wrapped(ours),
        ),
    ]
    if backward_only:
        reference = lambda inputs: attention_backward_reference(**inputs, causal=True, window=window)  # noqa: E731
        tolerance = 2 * ATTENTION_REL_L2[dtype]
    else:
        reference = lambda inputs: attention_reference(**inputs, causal=True, window=window)  # noqa: E731
        tolerance = (ATTENTION_REL_L2[dtype], ATTENTION_LSE_REL_L2)
    return Case(
        "attention_backward" if backward_only else "attention",
        [("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", head_dim)],
        dtype,
        [("causal", 1), ("kv_heads", kv_heads), ("window_left", left), ("window_right", -1)],
        make_inputs,
        reference,
        variants,
        tolerance,
        engine="by_dtype",
    )


def window_cases(quick):
    """Sliding windows, causal, bf16 head_dim 128: Mistral-7B's (32 heads over 8 kv heads, a window of
    4096 keys) at seq 16384, and a window of 1024 at 4 x 16 x 4096; forward, and the backward alone.
    --quick: a window of 128 at 2 x 4 (2) x 512."""
    shapes = [(torch.bfloat16, 2, 4, 2, 512, 128, 127)] if quick else [
        (torch.bfloat16, 1, 32, 8, 16384, 128, 4095),
        (torch.bfloat16, 4, 16, 16, 4096, 128, 1023),
    ]
    return [window_case(*shape) for shape in shapes] + [window_case(*shape, backward_only=True) for shape in shapes]


def attention_decode_case(batch, heads, kv_heads, cache):
    """One new token of each sequence (bf16, head_dim 128) against a full cache of `cache` keys: SDPA's
    call with q [B, H, 1, D] and the caches as k and v (one query sees every key, so no mask), each
    backend forced and SDPA's own choice, against cudalab.ops.attention_decode."""
    dims = [("batch", batch), ("heads", heads), ("tokens", 1), ("cache", cache), ("head_dim", 128)]

    def make_inputs(g):
        return {
            "q": normal(g, (batch, heads, 1, 128), torch.bfloat16, 1.0, 0.0),
            "k": normal(g, (batch, kv_heads, cache, 128), torch.bfloat16, 1.0, 0.0),
            "v": normal(g, (batch, kv_heads, cache, 128), torch.bfloat16, 1.0, 0.0),
            "lengths": torch.full((batch,), cache, dtype=torch.int32, device="cuda"),
        }

    def sdpa_choice(q, k, v, **_):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=k.shape[1] != q.shape[1])

    variants = [Variant(name, technique, sdpa(backend, False)) for name, backend, technique in SDPA_BACKENDS]
    variants.append(
        Variant("sdpa", "F.scaled_dot_product_attention, its own choice of backend (what Hugging Face calls)",
                forward(sdpa_choice))
    )
    variants.append(
        Variant(
            "cudalab",
            "cudalab.ops.attention_decode: the library's kernel (split-KV on tensor cores, the splits combined by "
            "their log-sum-exps)",
            forward(lambda q, k, v, lengths: ops.attention_decode(q, k, v, lengths)),
        )
    )
    return Case(
        "attention_decode",
        dims,
        torch.bfloat16,
        [("causal", 1), ("kv_heads", kv_heads), ("ragged", 0)],
        make_inputs,
        lambda inputs: decode_reference(**inputs),
        variants,
        (ATTENTION_REL_L2[torch.bfloat16], ATTENTION_LSE_REL_L2),
        engine="by_dtype",
    )


def attention_decode_cases(quick):
    """Decode against SDPA: Llama-3-8B's heads (32 over 8 kv heads) at batch 1 (cache 1k-128k), 8
    (1k-32k), 32 and 64; multi-head caches (32 over 32) at batch 1 and 8. --quick: batch 2, cache 512."""
    if quick:
        return [attention_decode_case(2, 8, 2, 512)]
    shapes = [(1, 32, 8, cache) for cache in (1024, 4096, 16384, 32768, 131072)]
    shapes += [(8, 32, 8, cache) for cache in (1024, 4096, 8192, 32768)]
    shapes += [(32, 32, 8, 4096), (64, 32, 8, 2048), (1, 32, 32, 4096), (8, 32, 32, 4096)]
    return [attention_decode_case(*shape) for shape in shapes]

