"""SGLang flags from the first release that has them, read in every SGLang wheel on PyPI
(bench/release_sources.py, bench/verify_engine_flags.py): the speculative flags from 0.4.1.post4
(absent in 0.4.1.post3) and each --speculative-algorithm value from its own release; the state-pool
flags from 0.5.2; --enable-lora / --max-lora-rank from 0.4.9.post3; fp8_e4m3 KV from 0.4.1.post6."""

from __future__ import annotations

import shlex
from dataclasses import replace

import pytest

from gpusize.core.engines import prepare
from gpusize.core.engines.sglang_speculative import algorithm_refusal
from gpusize.core.releases import SGLANG
from gpusize.core.settings import EngineSettings
from gpusize.core.workload import Request, Workload
from gpusize.errors import InputError
from gpusize.serving.launch import sglang_command
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec

QWEN = catalog_spec("Llama-3.1-8B")  # a family every modelled SGLang release runs


def _work(version: str, kv_dtype: str = "auto", **settings: object) -> Workload:
    engine = EngineSettings(name="sglang", version=version, **settings)  # type: ignore[arg-type]
    return prepare(QWEN, Request(context_tokens=8192, kv_dtype=kv_dtype, engine=engine))


def _command(work: Workload) -> list[str]:
    command = sglang_command(
        "meta-llama/Llama-3.1-8B", None, 1, work, 0.85, QWEN, find_gpu("H100-SXM")
    ).command
    assert command is not None
    return shlex.split(command)


@pytest.mark.parametrize("release", ["0.4.1.post4", "0.4.2", "0.4.3"])
def test_the_speculative_tree_flags_exist_from_0_4_1_post4(release: str) -> None:
    command = _command(_work(release, speculative_num_steps=3))
    assert command[command.index("--speculative-num-steps") + 1] == "3"


def test_the_speculative_flags_are_refused_before_0_4_1_post4() -> None:
    with pytest.raises(InputError, match="does not exist in SGLang 0.4.1.post3"):
        _work("0.4.1.post3", speculative_num_steps=3)


@pytest.mark.parametrize(
    "algorithm, before, first",
    [
        ("NEXTN", "0.4.3", "0.4.3.post1"),
        ("eagle3", "0.4.4.post1", "0.4.4.post2"),
        ("STANDALONE", "0.5.1.post3", "0.5.2"),
        ("ngram", "0.5.2", "0.5.3"),
    ],
)
def test_each_algorithm_from_its_first_release(algorithm: str, before: str, first: str) -> None:
    work = prepare(QWEN, Request(context_tokens=8192, engine=EngineSettings(name="sglang")))
    settings = EngineSettings(name="sglang", speculative_algorithm=algorithm)
    old = replace(work, engine=settings, release=SGLANG.resolve(before))
    new = replace(work, engine=settings, release=SGLANG.resolve(first))
    line = algorithm_refusal(old)
    assert line is not None and "\n" not in line and f"--engine-version {first}" in line
    assert algorithm_refusal(new) is None


def test_ngram_is_refused_through_the_workload_before_0_5_3() -> None:
    with pytest.raises(InputError, match=r"no --speculative-algorithm NGRAM.*0\.5\.3"):
        _work("0.5.2", speculative_algorithm="ngram")


@pytest.mark.parametrize("release", ["0.5.3", "0.5.23"])
def test_the_algorithm_is_printed_in_capitals(release: str) -> None:
    """Before 0.5.12 argparse takes only EAGLE, NGRAM, ... (choices); gpusize takes any case."""
    command = _command(_work(release, speculative_algorithm="ngram"))
    assert command[command.index("--speculative-algorithm") + 1] == "NGRAM"


def test_the_state_pool_flags_exist_from_0_5_2() -> None:
    command = _command(_work("0.5.2", max_mamba_cache_size=8))
    assert "--max-mamba-cache-size" in command
    with pytest.raises(InputError, match="does not exist in SGLang 0.5.1"):
        _work("0.5.1.post3", max_mamba_cache_size=8)


def test_enable_lora_exists_from_0_4_9_post3() -> None:
    command = _command(_work("0.4.9.post3", enable_lora=True, max_lora_rank=32))
    assert "--enable-lora" in command and command[command.index("--max-lora-rank") + 1] == "32"
    older = _command(_work("0.4.9.post2", enable_lora=True, max_lora_rank=32, lora_paths="a=/adapters/a"))
    assert "--enable-lora" not in older and "--max-lora-rank" not in older and "--lora-paths" in older


@pytest.mark.parametrize("release, name", [("0.4.1.post5", "fp8_e5m2"), ("0.4.1.post6", "fp8_e4m3")])
def test_fp8_kv_is_e4m3_from_0_4_1_post6(release: str, name: str) -> None:
    command = _command(_work(release, kv_dtype="fp8"))
    assert command[command.index("--kv-cache-dtype") + 1] == name


@pytest.mark.parametrize(
    "release, eagle_mib, standalone_mib",
    [
        ("0.4.7", 0, 0),
        ("0.4.7.post1", 2048, 0),
        ("0.5.1", 2048, 0),
        ("0.5.2", 2048, 6144),
        ("0.5.9", 2048, 6144),
        ("0.5.10", 4096, 6144),
        ("0.5.13.post1", 4096, 6144),
        ("0.5.14", 0, 0),
    ],
)
def test_the_default_fraction_keeps_the_draft_reserve_of_each_release(
    release: str, eagle_mib: int, standalone_mib: int
) -> None:
    """server_args.py `reserved_mem` for a --speculative-algorithm, read in every wheel: +2 GiB from
    0.4.7.post1 (none before), STANDALONE +6 GiB from 0.5.2, the EAGLE family +4 GiB from 0.5.10,
    none from 0.5.14 (the draft inside the budget)."""
    from gpusize.core.engines.sglang_defaults import sglang_defaults

    gpu, version = find_gpu("H100-SXM"), SGLANG.resolve(release).version
    plain = sglang_defaults(gpu, 1, version).mem_fraction_static
    for algorithm, mib in (("EAGLE", eagle_mib), ("STANDALONE", standalone_mib)):
        if algorithm == "STANDALONE" and version < SGLANG.resolve("0.5.2").version:
            continue
        drafted = sglang_defaults(gpu, 1, version, algorithm=algorithm).mem_fraction_static
        assert round((plain - drafted) * gpu.memory_mib) == pytest.approx(
            mib, abs=gpu.memory_mib / 1000
        )  # 3 decimals
