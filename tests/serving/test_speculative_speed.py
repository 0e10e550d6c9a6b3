"""Speculative decoding in the decode-step estimate (serving/throughput.py `_speculative`): the stated
acceptance rate a and k proposed tokens give (1 - a^(k+1)) / (1 - a) tokens per verification step
(Leviathan et al. 2023, eq. 1); the draft's k steps each read its weights and pay the fitted per-step
and per-layer costs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpusize.core.engines import prepare
from gpusize.core.parse import parse_config
from gpusize.core.settings import EngineSettings
from gpusize.core.speculative import DraftModel, expected_tokens_per_step
from gpusize.core.workload import Request
from gpusize.errors import InputError
from gpusize.serving import calibrated
from gpusize.serving.throughput import decode_step, memory_class
from tests.helpers import catalog_spec, find_gpu

HEAD = Path(__file__).resolve().parents[1] / "data" / "drafts" / "EAGLE3-LLaMA3.1-Instruct-8B" / "config.json"
EAGLE3 = '{"method": "eagle3", "model": "head", "num_speculative_tokens": 3}'


def eagle3_request(acceptance: float | None) -> Request:
    config = json.loads(HEAD.read_text())
    head = DraftModel("head", parse_config(config), config["draft_vocab_size"])
    settings = EngineSettings(speculative_config=EAGLE3)
    return Request(context_tokens=4096, engine=settings, draft=head, acceptance_rate=acceptance)


def test_without_an_acceptance_rate_the_speed_is_unchanged() -> None:
    spec, gpu = catalog_spec("Llama-3.1-8B"), find_gpu("H100")
    plain = decode_step(spec, prepare(spec, Request(context_tokens=4096)), gpu, 1, 8, 4096)
    drafted = decode_step(spec, prepare(spec, eagle3_request(None)), gpu, 1, 8, 4096)
    assert plain is not None and drafted is not None and drafted.step_s == plain.step_s


def test_an_acceptance_rate_divides_the_step_by_the_tokens_it_yields() -> None:
    """Llama-3.1-8B + EAGLE-3 head (849,371,136 B) on an H100, 8 sequences, a = 0.7, k = 3: the step is
    memory-bound, so verifying 4 tokens reads what one does; it gains 3 draft steps of
    849,371,136 B / (3,350 GB/s x 0.836) + 212 us + 30.6 us x 1 layer, and yields
    (1 - 0.7^4) / 0.3 = 2.533 tokens."""
    spec, gpu = catalog_spec("Llama-3.1-8B"), find_gpu("H100")
    plain = decode_step(spec, prepare(spec, Request(context_tokens=4096)), gpu, 1, 8, 4096)
    drafted = decode_step(spec, prepare(spec, eagle3_request(0.7)), gpu, 1, 8, 4096)
    assert plain is not None and drafted is not None and drafted.bound == "memory"
    speed = calibrated.engine_speed("vllm")
    bandwidth = gpu.bandwidth_gbps * 1e9 * speed.efficiency(memory_class(gpu))
    draft_s = 3 * (849_371_136 / bandwidth + speed.step_s + speed.layer_s)
    accepted = expected_tokens_per_step(0.7, 3)
    assert accepted == pytest.approx(2.533)
    assert drafted.step_s == pytest.approx((plain.step_s + draft_s) / accepted)
    assert drafted.aggregate_tokens_per_s == pytest.approx(8 / drafted.step_s)


def test_an_acceptance_rate_without_speculative_decoding_is_refused() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    with pytest.raises(InputError, match="--acceptance-rate needs speculative decoding"):
        prepare(spec, replace(Request(context_tokens=4096), acceptance_rate=0.7))
