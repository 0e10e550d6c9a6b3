"""SGLang `--chunked-prefill-size -1`: chunked prefill off (SGLang's own meaning of -1). The setting
takes -1 besides the sizes >= 1 (Setting.off); 0 and other negatives are refused.

Rule (sgl-project/sglang python/sglang/srt/server_args.py, `_handle_gpu_memory_settings`, 0.5.3+):
"if self.chunked_prefill_size > 0: reserved_mem += max(self.chunked_prefill_size, 2048) * 1.5 else:
reserved_mem += max(self.max_prefill_tokens, 2048) * 1.5" with max_prefill_tokens 16384 by default;
piecewise CUDA-graph sizes stop at piecewise_cuda_graph_max_tokens = chunked_prefill_size (non-MLA),
so none are captured at -1."""

from __future__ import annotations

import json

import pytest

from gpusize.core.engines import engine
from gpusize.core.engines.sglang_defaults import MAX_PREFILL_TOKENS
from gpusize.core.settings import settings_from
from gpusize.errors import InputError
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, run_in_process, workload

MODEL = "Qwen3-8B"


def test_minus_one_is_accepted_and_zero_is_refused() -> None:
    assert settings_from({"name": "sglang", "chunked_prefill_size": -1}).chunked_prefill_size == -1
    for bad in (0, -2):
        with pytest.raises(InputError, match=r"greater than zero, or -1 \(off\)"):
            settings_from({"name": "sglang", "chunked_prefill_size": bad})


def test_off_reserves_for_a_whole_max_prefill_batch() -> None:
    """Worked example, H100 SXM (81,559 MiB), TP 1, the newest release: reserved = 512 + 16,384 x 1.5
    + cuda_graph_max_bs 256 x 2 + 1/8 x 1,024 + no piecewise graphs = 25,728 MiB, over the 10 GiB
    floor: mem_fraction_static = round((81,559 - 25,728) / 81,559, 3) = 0.685 (0.83 with the 8,192
    default chunk)."""
    spec, h100 = catalog_spec(MODEL), find_gpu("H100")
    off = workload(spec, 8192, engine_name="sglang", chunked_prefill_size=-1)
    settings = engine("sglang").effective_settings(spec, h100, 1, off)
    reserved = 512 + MAX_PREFILL_TOKENS * 1.5 + 256 * 2 + 1 / 8 * 1024
    assert settings["cuda_graph_max_bs"] == 256 and settings["chunked_prefill_size"] == -1
    assert settings["mem_fraction_static"] == round((81559 - reserved) / 81559, 3) == 0.685
    plain = engine("sglang").effective_settings(spec, h100, 1, workload(spec, 8192, engine_name="sglang"))
    assert plain["mem_fraction_static"] == 0.83
    fewer = engine("sglang").evaluate(spec, h100, 1, off)
    more = engine("sglang").evaluate(spec, h100, 1, workload(spec, 8192, engine_name="sglang"))
    assert (fewer.kv_cache_capacity_tokens or 0) < (more.kv_cache_capacity_tokens or 0)


def test_the_command_line_takes_minus_one_and_prints_it() -> None:
    args = ("serve", MODEL, "--engine", "sglang", "--gpu", "H100", "--gpus", "1", "--users", "4")
    result = run_in_process(*args, "--chunked-prefill-size", "-1", "--json")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["workload"]["engine"]["chunked_prefill_size"] == -1
    assert "--chunked-prefill-size -1" in data["launch"]["sglang"]["command"]
    refused = run_in_process(*args, "--chunked-prefill-size", "0")
    assert refused.code == 2 and refused.stderr.count("\n") == 1 and "-1 (off)" in refused.stderr
    assert refused.stdout == ""
