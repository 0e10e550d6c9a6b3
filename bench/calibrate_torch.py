"""Recompute gpusize's PyTorch-memory calibration and its accuracy tables (bench/train_calibration.md).

1. The fit of the two training constants (BACKWARD_WORKSPACE_LAYERS, TORCHTUNE_LOGITS_BYTES) over the
   torchtune and Unsloth records of tests/data/reference/engine-logs.yaml: grid least squares of the log
   residuals (tests/training_records.py `fit_constants`). No H200 or published record takes part.
2. The CUDA context constant: the largest `smi_used_mib - peak_reserved` over the H200 calibration lines.
3. Accuracy on the H200 measurements (allocated peak and device figure, calibration vs held-out lines,
   inference and training) and on the published records (tests/data/torch/published.yaml).

Run: python bench/calibrate_torch.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the records and cases live in tests/

from gpusize.core import runtime  # noqa: E402
from gpusize.sources.catalog import find_gpu  # noqa: E402
from tests import torch_inference_records as inference  # noqa: E402
from tests import torch_training_records as training  # noqa: E402
from tests.training_records import fit_constants  # noqa: E402

MIB = 2**20


def summary(label: str, errors: list[float]) -> str:
    if not errors:
        return f"{label}: none"
    absolute = [abs(e) for e in errors]
    return (
        f"{label}: n={len(errors)}, mean |err| {statistics.mean(absolute):.1%}, worst {max(absolute):.1%} "
        f"(signed mean {statistics.mean(errors):+.1%})"
    )


def main() -> None:
    workspace, logits, best = fit_constants()
    print(
        f"fit: workspace {workspace} layers, torchtune logits {logits} B/element, "
        f"sum sq log residual {best:.4f}"
    )
    gaps = [
        r["smi_used_mib"] - r["peak_reserved"] / MIB
        for r in inference.INFER
        if inference.key(r) not in inference.HOLDOUT
    ]
    print(
        f"CUDA context: largest smi - reserved over the calibration lines {max(gaps):.0f} MiB "
        f"(constant {runtime.TORCH_CUDA_CONTEXT_BYTES / MIB:.0f} MiB)"
    )
    print()
    for name, recs, held, errors in (
        ("inference", inference.INFER, inference.HOLDOUT, inference.errors),
        ("training", training.TRAIN, training.HOLDOUT, training.h200_errors),
    ):
        for split in ("calibration", "holdout"):
            chosen = [
                r
                for r in recs
                if ((inference.key(r) if name == "inference" else training.key(r)) in held)
                == (split == "holdout")
            ]
            pairs = [errors(r) for r in chosen]
            print(summary(f"H200 {name} {split} allocated", [a for a, _ in pairs]))
            print(summary(f"H200 {name} {split} device", [d for _, d in pairs]))
    print()
    for figure in ("allocated", "reserved", "device"):
        cases = [c for c in training.CASES if c.figure == figure]
        errs = [training.predicted(c) / training.measured(c) - 1 for c in cases]
        print(summary(f"published training {figure}", errs))
    generate = [inference.generate_error(*row) for row in inference.LITGPT_GENERATE]
    print(summary("published inference allocated (LitGPT generate)", generate))
    ooms = [c for c in training.CASES if c.figure == "oom"]
    caught = sum(training.predict(c).device_bytes > find_gpu(c.gpu).visible_bytes for c in ooms)
    print(f"published OOM runs predicted not to fit: {caught} of {len(ooms)}")


if __name__ == "__main__":
    main()
