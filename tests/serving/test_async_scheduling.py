"""vLLM's async scheduling in the decode step (core/engines/vllm/async_scheduling.py): from 0.14.0 the
scheduler prepares step N+1 while step N runs, so a step's per-sequence host work overlaps the GPU's
step. The rules are vllm/config/vllm.py 0.14.0's (`async_scheduling` None -> True unless pipeline
parallel, speculation other than EAGLE/MTP, or an unsupported executor); 0.13.0's SchedulerConfig has
`async_scheduling: bool = False`. Synthetic cases: no record pins each branch."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusize.core.engines import engine
from gpusize.core.engines.vllm.async_scheduling import ASYNC_SCHEDULING_SINCE, overlaps_host_work
from gpusize.serving import calibrated
from gpusize.serving.throughput import decode_step
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload

SPEC = catalog_spec("Llama-3.1-8B")
H100, MI300X = find_gpu("H100"), find_gpu("MI300X")


def _work(version: str | None = None, **settings: object):  # type: ignore[no-untyped-def]
    work = workload(SPEC, 4096, **settings)
    return replace(work, engine=replace(work.engine, version=version))


@pytest.mark.parametrize(
    ("version", "on"), [("0.13.0", False), (ASYNC_SCHEDULING_SINCE, True), ("0.19.1", True), (None, True)]
)
def test_from_0_14_by_default(version: str | None, on: bool) -> None:
    # None: the newest release gpusize models
    assert overlaps_host_work(_work(version), H100) is on


@pytest.mark.parametrize(
    ("config", "on"),
    [
        ('{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}', False),
        ('{"method": "mtp", "num_speculative_tokens": 1}', True),
    ],
)
def test_speculation_other_than_eagle_or_mtp_turns_it_off(config: str, on: bool) -> None:
    assert overlaps_host_work(_work("0.19.1", speculative_config=config), H100) is on


def test_rocm_keeps_the_host_work_serial() -> None:
    assert overlaps_host_work(_work("0.19.1"), MI300X) is False


def test_the_step_is_the_longer_of_the_gpu_part_and_the_host_work() -> None:
    """At 64 sequences the host work (sequence_s x 64) is part of the serial step; overlapped, the step
    is whichever is longer of it and the rest. One engine over servers (host_overlap=False) keeps it
    serial, as vLLM does on Ray and in pipeline stages."""
    host = calibrated.engine_speed("vllm").sequence_s * 64
    serial = decode_step(SPEC, _work("0.13.0"), H100, 1, 64, 2048)
    overlapped = decode_step(SPEC, _work("0.14.0"), H100, 1, 64, 2048)
    across = decode_step(SPEC, _work("0.14.0"), H100, 1, 64, 2048, host_overlap=False)
    assert serial is not None and overlapped is not None and across is not None
    assert across.step_s == pytest.approx(serial.step_s)
    rest = serial.step_s - host
    assert overlapped.step_s == pytest.approx(max(rest, host))
    assert overlapped.step_s < serial.step_s
    # what stays in the step is reported as fixed: the rest's fixed part, or the host work if longer
    assert overlapped.fixed_s == pytest.approx(serial.fixed_s - host if rest >= host else host)


def test_sglang_and_llamacpp_are_unchanged() -> None:
    for name in ("sglang", "llamacpp"):
        work = workload(SPEC, 4096, engine_name=name)
        assert decode_step(SPEC, work, H100, 1, 64, 2048) is not None
    assert engine("sglang").overlaps_host_work is None and engine("llamacpp").overlaps_host_work is None
