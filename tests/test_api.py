"""The library surface: public names resolve lazily, the docstring example runs, import is light."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gpusize


def test_public_names() -> None:
    for name in gpusize.__all__:
        assert getattr(gpusize, name) is not None


def test_docstring_example() -> None:
    from gpusize import find_gpu, find_model, fit, parse_config

    spec = parse_config(find_model("Qwen3-32B").config)
    best = fit(spec, find_gpu("H100"), context_tokens=32768, batch=4)[-1]
    assert best.fits and best.num_gpus == 2


def test_import_is_light() -> None:
    heavy = "('pydantic', 'yaml', 'typer', 'rich', 'gpusize.')"
    code = f"import sys, gpusize; print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_sizing_path_never_imports_pydantic_or_rich(tmp_path: Path) -> None:
    """Sizing a catalog model on the command line needs neither (start-up time): pydantic only validates
    catalog files that are not in the cache (the first run fills it), Rich is not used at all."""
    env = {**os.environ, "GPUSIZE_CACHE_DIR": str(tmp_path)}
    subprocess.run(
        [sys.executable, "-m", "gpusize", "fit", "Qwen3-8B", "-q"], env=env, check=False, timeout=60
    )
    code = (
        "import sys; from gpusize.cli import register; from gpusize.cli.app import run_command; "
        "register(['fit']); run_command(['fit', 'Qwen3-8B', '--gpu', 'H100', '--quiet']); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'rich', 'yaml', "
        "'huggingface_hub'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert out.strip() == "[]"
