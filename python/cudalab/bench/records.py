"""Records: each variant verified against the case's float64 reference, timed if it passed, and
written as a cudalab results file (schema cudalab-results/2, rendered by ``cudalab report``). The
problem, work, summary and roofline of each record are the C++ harness's (``cudalab model``)."""

import json
import math
import os

import torch

from .timing import time_call

SCHEMA = "cudalab-results/2"


def rel_l2(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def number_or_name(value):
    """JSON has no NaN or infinity: results files name them, as the C++ side writes them."""
    if math.isnan(value):
        return "nan"
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def compare(outputs, references, tolerance):
    """The harness's comparison record for the outputs as a whole: with a tolerance, each output's
    relative L2 error against float64 must be within it; without one, outputs must be equal. A
    tuple gives each output its own tolerance (the record names the largest). A variant that
    returns fewer outputs than the references (SDPA: no log-sum-exp) is compared on those it has."""
    references = references[: len(outputs)]
    tolerances = tuple(tolerance) if isinstance(tolerance, (tuple, list)) else (tolerance,) * len(references)
    tolerance = max(tolerances, default=0.0)
    count = sum(r.numel() for r in references)
    non_finite = sum(int((~torch.isfinite(o.double())).sum()) for o in outputs if o.is_floating_point())
    worst = max_abs = 0.0
    mismatches = 0
    for o, r, bound in zip(outputs, references, tolerances):
        if o.shape != r.shape:
            return {
                "count": count,
                "mismatches": count,
                "unwritten": 0,
                "non_finite": non_finite,
                "first_mismatch": 0,
                "first_mismatch_out": "nan",
                "first_mismatch_ref": "nan",
                "max_abs_error": "inf",
                "rel_l2_error": "inf",
                "tolerance": {"rtol": tolerance, "atol": 0.0},
            }
        diff = (o.double() - r.double()).abs()
        largest = diff.max().item() if diff.numel() else 0.0
        error = rel_l2(o, r) if r.numel() else 0.0
        # NaN wins: max() would drop it (every comparison with NaN is false).
        max_abs = largest if math.isnan(largest) or largest > max_abs else max_abs
        worst = error if math.isnan(error) or error > worst else worst
        if bound == 0:
            mismatches += int((diff != 0).sum())
        elif not error <= bound:
            mismatches += int(o.numel())  # the whole output fails its relative L2 bound
    return {
        "count": count,
        "mismatches": mismatches,
        "unwritten": 0,
        "non_finite": non_finite,
        "first_mismatch": -1 if mismatches == 0 else 0,
        "first_mismatch_out": 0.0,
        "first_mismatch_ref": 0.0,
        "max_abs_error": number_or_name(max_abs),
        "rel_l2_error": number_or_name(worst),
        "tolerance": {"rtol": tolerance, "atol": 0.0},
    }


def run_case(case, seed, model, ceilings, flush, rule):
    """The case's records: each variant verified, then timed if it passed; then the C++ model of the
    problem and of each timed variant's samples."""
    # Each case compiles its own shape: across cases of one function (one code object) dynamo would
    # reach its recompile limit (8 in torch 2.11) and refuse the ninth under fullgraph=True.
    torch._dynamo.reset()
    generator = torch.Generator(device="cuda").manual_seed(seed)
    inputs = case.make_inputs(generator)
    references = case.reference(inputs)
    outcomes, samples = [], []  # (variant, fields of its record), and the timed variants' samples
    for variant in case.variants:
        if variant.skip_reason:
            outcomes.append((variant, {"outcome": "skipped", "skip_reason": variant.skip_reason}))
            continue
        try:
            run = variant.prepare(inputs)
            outputs = run()
        except Exception as error:  # a baseline that cannot run here is reported, not fatal
            why = f"{type(error).__name__}: {error}".splitlines()[0]
            outcomes.append((variant, {"outcome": "skipped", "skip_reason": why}))
            continue
        comparison = compare(outputs, references, case.tolerance)
        if comparison["mismatches"] or comparison["non_finite"]:
            outcomes.append((variant, {"comparison": comparison, "outcome": "failed"}))
            continue
        samples.append(time_call(run, flush, rule))
        outcomes.append((variant, {"comparison": comparison, "outcome": "passed", "timing": len(samples) - 1}))
        del run, outputs
    (answer,) = model.ask([case.request(samples)], ceilings=ceilings)["problems"]
    records, first_ms = [], None
    for variant, fields in outcomes:
        record = {
            "op": "pytorch." + case.op,
            "variant": variant.name,
            "technique": variant.technique,
            "role": "ladder" if variant.name == "cudalab" else "baseline",
            "problem": answer["problem"],
            "work": answer["work"],
            "seed": seed,
            "distribution": case.distribution,
        }
        if "comparison" in fields:
            record.update(unit=answer["unit"], comparison=fields["comparison"])
        record["outcome"] = fields["outcome"]
        if "skip_reason" in fields:
            record["skip_reason"] = fields["skip_reason"]
        if "timing" in fields:
            timing = answer["timings"][fields["timing"]]
            first_ms = first_ms or timing["time_ms"]["median"]
            record.update(timing, speedup_vs_first=first_ms / timing["time_ms"]["median"])
        records.append(record)
    return records


def save(document, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".partial", "w") as f:
        json.dump(document, f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(path + ".partial", path)
