"""What later vLLM releases removed, read in their wheels from PyPI (bench/release_sources.py,
bench/verify_engine_flags.py): VLLM_USE_V1 is gone from vllm/envs.py from 0.11.1, bitsandbytes
(quantization/bitsandbytes.py, model_loader/bitsandbytes_loader.py and the 'bitsandbytes' entry of
QuantizationMethods) from 0.28.0."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusize.core.engines import engine
from gpusize.serving.launch import vllm_command
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, cli, workload

QWEN = catalog_spec("Qwen2.5-14B")


@pytest.mark.parametrize("release, printed", [("0.11.0", True), ("0.11.1", False), ("0.33.0", False)])
def test_vllm_use_v1_is_set_only_where_vllm_reads_it(release: str, printed: bool) -> None:
    work = replace(workload(QWEN, 8192, vllm_use_v1=True), release=engine("vllm").releases.resolve(release))
    command = vllm_command("Qwen/Qwen2.5-14B", None, 1, work, 0.9, QWEN, find_gpu("H100-SXM")).command
    assert command is not None and ("VLLM_USE_V1=1" in command) is printed


@pytest.mark.parametrize("release, refused", [("0.27.1", False), ("0.28.0", True), ("0.33.0", True)])
def test_bitsandbytes_is_refused_from_0_28_0(release: str, refused: bool) -> None:
    result = cli(
        "fit", "Qwen2.5-14B", "--ctx", "8k", "--gpu", "H100-SXM", "--quantization", "bitsandbytes",
        "--engine-version", release,
    )  # fmt: skip
    if not refused:
        assert result.code in (0, 1), result.stderr
        return
    assert result.code == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert "\n" not in line and "bitsandbytes" in line and "0.27.1" in line
