"""vLLM `--language-model-only` (vllm/config/multimodal.py MultiModalConfig.language_model_only, first
in 0.17.0): `get_limit_per_prompt` answers 0 for every modality, so it sizes as
`--limit-mm-per-prompt` with 0 of each: no encoder profile and, from 0.10.1, no tower weights. One
field in core/settings/reserves.py and one line in core/engines/vllm/multimodal.py add it."""

from __future__ import annotations

from gpusize.core.engines import vllm
from gpusize.core.releases import parse_version
from gpusize.core.settings import launch_flag, settings_from, taken_by
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, run_in_process, workload


def test_it_sizes_as_zero_items_of_every_modality() -> None:
    spec = catalog_spec("Qwen3-VL-8B-Instruct")
    gpu = find_gpu("H100")
    full = vllm.evaluate(spec, gpu, 1, workload(spec, 8192))
    flag = vllm.evaluate(spec, gpu, 1, workload(spec, 8192, language_model_only=True))
    zeros = vllm.evaluate(spec, gpu, 1, workload(spec, 8192, limit_mm_per_prompt='{"image":0,"video":0}'))
    assert [r.name for r in full.per_gpu.reserves] == ["encoder_profile"]
    assert flag.per_gpu == zeros.per_gpu and flag.per_gpu.reserves == ()
    assert flag.per_gpu.weights_bytes < full.per_gpu.weights_bytes  # the tower is not loaded


def test_the_flag_exists_from_0_17_0_and_is_printed() -> None:
    before, first = parse_version("0.16.0"), parse_version("0.17.0")
    assert before is not None and first is not None
    assert settings_from({"language_model_only": True}).language_model_only is True
    assert not taken_by("language_model_only", before) and taken_by("language_model_only", first)
    assert launch_flag("language_model_only") == "--language-model-only"


def test_cli_refuses_it_before_0_17_0_and_for_other_engines() -> None:
    old = run_in_process("fit", "Qwen3-VL-8B-Instruct", "--gpu", "H100", "--language-model-only",
                         "--engine-version", "0.16.0")  # fmt: skip
    assert old.code == 2 and "--language-model-only does not exist in vLLM 0.16.0" in old.stderr
    other = run_in_process("fit", "Qwen3-VL-8B-Instruct", "--gpu", "H100", "--language-model-only",
                           "--engine", "sglang")  # fmt: skip
    assert other.code == 2 and "--language-model-only" in other.stderr and other.stdout == ""


def test_the_launch_command_carries_it() -> None:
    served = run_in_process(
        "serve", "Qwen3-VL-8B-Instruct", "--gpu", "H100", "--users", "8", "--language-model-only"
    )
    assert served.code == 0 and "--language-model-only" in served.stdout
