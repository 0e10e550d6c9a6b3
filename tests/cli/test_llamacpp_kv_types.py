"""llama.cpp's KV cache types under its own names (`--kv-dtype q8_0`, `q4_0`, f16 by default):
accepted with --engine llamacpp, sized at their block sizes, refused in one line for other engines,
and suggested where a quantized cache makes the plan fit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpusize.core.engines.llamacpp import LLAMACPP_KV_BYTES
from tests.helpers import cli as run

LLAMA = ("fit", "Llama-3.1-8B", "--ctx", "32k", "--gpu", "RTX4090", "--engine", "llamacpp")


def _json(*args: str) -> dict[str, Any]:
    r = run(*args, "--json")
    assert r.code in (0, 1), r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def test_llamacpp_defaults_to_its_own_f16_cache() -> None:
    data = _json(*LLAMA)
    assert data["workload"]["kv_cache_dtype"] == "f16"
    assert data["assumptions"]["settings"]["cache_type"] == "f16"


@pytest.mark.parametrize("kind", ["q8_0", "q4_0"])
def test_a_quantized_cache_under_llamacpps_name_is_sized_at_its_block_size(kind: str) -> None:
    f16 = _json(*LLAMA)["memory"]["kv_cache_bytes"]
    data = _json(*LLAMA, "--kv-dtype", kind)
    assert data["workload"]["kv_cache_dtype"] == kind
    assert data["assumptions"]["settings"]["cache_type"] == kind
    ratio = data["memory"]["kv_cache_bytes"] / f16
    assert ratio == pytest.approx(LLAMACPP_KV_BYTES[kind] / 2, rel=1e-3)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_another_engine_refuses_llamacpps_name_in_one_line(engine: str) -> None:
    r = run("fit", "Llama-3.1-8B", "--engine", engine, "--kv-dtype", "q8_0")
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "--engine llamacpp" in r.stderr


def test_a_quantized_v_cache_without_flash_attention_is_refused() -> None:
    r = run(*LLAMA, "--kv-dtype", "q4_0", "--no-flash-attn")
    assert r.code == 2 and "flash attention" in r.stderr


def test_a_quantized_cache_is_suggested_where_it_fits_and_fits_when_run() -> None:
    ask = ("fit", "Llama-3.1-8B", "--ctx", "128k", "--batch", "2", "--gpu", "RTX3060", "--engine", "llamacpp")
    data = _json(*ask, "--gpus", "1")
    kv = [s for s in data["suggestions"] if s["changes"][0]["value"] in ("q8_0", "q4_0")]
    assert kv, [s["summary"] for s in data["suggestions"]]
    flags = [x for c in kv[0]["changes"] for x in (c["flag"], c["value"])]
    assert _json(*ask, *flags)["fits"]
