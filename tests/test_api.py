"""The library surface: public names resolve lazily and the docstring example runs."""

from __future__ import annotations

import subprocess
import sys

import gpusize


def test_public_names() -> None:
    for name in gpusize.__all__:
        assert getattr(gpusize, name) is not None


def test_docstring_example() -> None:
    from gpusize import count_params, find_gpu, find_model, parse_config, plan

    spec = parse_config(find_model("Qwen3-32B").config)
    best = plan.smallest_fit(
        spec, count_params(spec), find_gpu("H100"), plan.Workload(32768, 1, "auto", "auto")
    )[-1]
    assert best.fits and best.num_gpus == 2


def test_import_is_light() -> None:
    heavy = "('pydantic', 'yaml', 'gpusize.')"
    code = f"import sys, gpusize; print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
