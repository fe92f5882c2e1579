"""Cross-entropy over a vocabulary as a training step runs it: the mean loss and the logits' gradient
together, against eager PyTorch, torch.compile and Liger-Kernel (where its package is installed)."""

import torch
import torch.nn.functional as F

from ... import ops
from .common import COMPILE_TECHNIQUE, REL_L2, Case, Variant, normal

IGNORE_INDEX = -100


def _loss_and_gradient(loss_fn):
    """A variant running loss_fn(logits, target) and its gradient with respect to the logits, as one
    training step's loss and backward (the forward's graph is built inside each sample)."""

    def prepare(inputs):
        # A copy for each variant: Liger-Kernel's loss writes its gradient over its input's logits.
        logits = inputs["logits"].detach().clone().requires_grad_()
        target = inputs["target"]

        def run():
            loss = loss_fn(logits, target)
            (grad,) = torch.autograd.grad(loss, logits)
            return loss, grad

        return run

    return prepare


def _liger():
    """Liger-Kernel's cross-entropy module, or the reason there is none."""
    try:
        from liger_kernel.transformers import LigerCrossEntropyLoss
    except ImportError as error:
        return None, f"not installed: liger_kernel ({error})"
    return LigerCrossEntropyLoss(ignore_index=IGNORE_INDEX), ""


def cross_entropy_cases(rows, vocabularies, dtypes):
    """The mean cross-entropy of [rows, vocab] logits (normal, deviation 2) against uniform targets,
    one row in eight ignored, and its gradient."""
    liger, liger_missing = _liger()
    cases = []
    for vocab in vocabularies:
        for dtype in dtypes:

            def make_inputs(g, vocab=vocab, dtype=dtype):
                target = torch.randint(0, vocab, (rows,), device="cuda", generator=g)
                target[7::8] = IGNORE_INDEX
                return {"logits": normal(g, (rows, vocab), dtype, 2.0, 0.0), "target": target}

            def reference(inputs):
                logits = inputs["logits"].double().requires_grad_()
                loss = F.cross_entropy(logits, inputs["target"], ignore_index=IGNORE_INDEX)
                return loss, torch.autograd.grad(loss, logits)[0]

            def eager(logits, target):
                return F.cross_entropy(logits, target, ignore_index=IGNORE_INDEX)

            def ours(logits, target):
                return ops.cross_entropy(logits, target, ignore_index=IGNORE_INDEX)

            compiled = torch.compile(eager, fullgraph=True, dynamic=False)
            variants = [
                Variant("eager", "F.cross_entropy and its autograd (log_softmax, nll_loss)", _loss_and_gradient(eager)),
                Variant("compile", COMPILE_TECHNIQUE + ", forward and backward", _loss_and_gradient(compiled)),
                Variant(
                    "liger",
                    "Liger-Kernel's LigerCrossEntropyLoss (Triton; the gradient written in the forward)",
                    _loss_and_gradient(liger) if liger is not None else None,
                    liger_missing,
                ),
                Variant(
                    "cudalab",
                    "cudalab.ops.cross_entropy: the library's rung, the gradient written in the forward and "
                    "scaled on the device",
                    _loss_and_gradient(ours),
                ),
            ]
            cases.append(
                Case(
                    "cross_entropy",
                    [("rows", rows), ("vocab", vocab)],
                    dtype,
                    [("label_smoothing", 0.0)],
                    make_inputs,
                    reference,
                    variants,
                    (REL_L2[dtype], 2 * REL_L2[dtype]),
                )
            )
    return cases
