"""GGUF file types as dtypes: ggml block sizes, llama-quantize's mixture rules, and the bytes they give
against a public llama.cpp load log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusize.core.gguf_quant import (
    GGML_TYPES,
    LLAMA_QUANTIZE_FTYPES,
    bits_of,
    ftype_name,
    quant_facts,
    tensor_type,
)
from gpusize.core.gguf_tensors import gguf_file_bytes, gguf_layer_bytes
from gpusize.core.weights import estimated_layers, rope_cache_bytes, weight_format, weights_bytes
from gpusize.core.workload import weight_dtype
from gpusize.errors import InputError
from gpusize.sources.resolve import resolve_model
from tests.gguf_files import llama31_8b_q4_k_m
from tests.helpers import catalog_spec, cli

MIB = 1 << 20


def test_block_sizes_are_ggml_s() -> None:
    """Every ggml type's (block elements, block bytes) as gguf-py's GGML_QUANT_SIZES has them."""
    gguf = pytest.importorskip("gguf")
    for name, size in GGML_TYPES.items():
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name]] == size, name


def test_every_ftype_is_llama_quantize_s() -> None:
    gguf = pytest.importorskip("gguf")
    for name in LLAMA_QUANTIZE_FTYPES:
        key = "MOSTLY_MXFP4_MOE" if name == "MXFP4" else f"MOSTLY_{name}"
        assert key in gguf.LlamaFileType.__members__, name


@pytest.mark.parametrize(
    ("kind", "bits"),
    [("Q4_K", 4.5), ("Q6_K", 6.5625), ("Q8_0", 8.5), ("Q4_0", 4.5), ("IQ4_XS", 4.25), ("IQ2_XXS", 2.0625),
     ("Q3_K", 3.4375), ("Q5_K", 5.5), ("MXFP4", 4.25), ("IQ1_S", 1.5625)],
)  # fmt: skip
def test_bits_per_weight(kind: str, bits: float) -> None:
    assert bits_of(kind) == bits


def test_q4_k_m_mixture_rules() -> None:
    """Q4_K_M: attn_v and ffn_down Q6_K where use_more_bits (first/last eighth, every third between),
    Q4_K elsewhere; the output head Q6_K; the 70B Llama's attn_v Q5_K; an untied embedding Q4_K."""
    m = quant_facts(catalog_spec("Llama-3.1-8B"))  # 32 layers: n/8 = 4, 7n/8 = 28
    v = [tensor_type("Q4_K_M", "attn_v", i, m, 4096) for i in range(32)]
    assert [i for i, t in enumerate(v) if t == "Q6_K"] == [
        0,
        1,
        2,
        3,
        6,
        9,
        12,
        15,
        18,
        21,
        24,
        27,
        28,
        29,
        30,
        31,
    ]
    assert set(v) == {"Q4_K", "Q6_K"}
    assert tensor_type("Q4_K_M", "ffn_down", 5, m, 14336) == "Q4_K"
    assert tensor_type("Q4_K_M", "attn_q", 0, m, 4096) == "Q4_K"
    assert tensor_type("Q4_K_M", "output", 0, m, 4096) == "Q6_K"
    assert tensor_type("Q4_K_M", "token_embd", 0, m, 4096) == "Q4_K"
    big = quant_facts(catalog_spec("Llama-3.3-70B-Instruct"))
    assert tensor_type("Q4_K_M", "attn_v", 10, big, 8192) == "Q5_K"


def test_mixture_rules_of_other_ftypes() -> None:
    m = quant_facts(catalog_spec("Llama-3.1-8B"))
    assert {tensor_type("Q8_0", c, 3, m, 4096) for c in ("attn_v", "ffn_down", "token_embd")} == {"Q8_0"}
    assert tensor_type("Q8_0", "output", 0, m, 4096) == "Q8_0"
    assert tensor_type("Q3_K_M", "attn_v", 1, m, 4096) == "Q5_K"
    assert tensor_type("Q3_K_M", "attn_output", 1, m, 4096) == "Q4_K"
    assert tensor_type("IQ2_XXS", "token_embd", 0, m, 4096) == "Q2_K"
    assert tensor_type("IQ2_XXS", "output", 0, m, 4096) == "Q5_K"
    assert tensor_type("IQ2_XXS", "attn_v", 0, m, 4096) == "Q4_K"  # GQA 4
    assert tensor_type("IQ4_XS", "attn_v", 0, m, 4096) == "Q5_K"
    oss = quant_facts(catalog_spec("gpt-oss-20b"))
    assert tensor_type("MXFP4", "ffn_up", 0, oss, 2880, experts=True) == "MXFP4"
    assert tensor_type("MXFP4", "attn_q", 0, oss, 2880) == "Q8_0"
    # a row of 2880 is not a whole number of 256-blocks: Q4_K falls back to Q5_0, Q6_K to Q8_0
    assert tensor_type("Q4_K_M", "attn_q", 0, oss, 2880) == "Q5_0"
    assert tensor_type("Q4_K_M", "output", 0, oss, 2880) == "Q8_0"
    tied = quant_facts(catalog_spec("gemma-3-27b-it"))
    assert tensor_type("Q4_K_M", "token_embd", 0, tied, 5376) == "Q6_K"  # the output's type


def test_llama_3_1_8b_q4_k_m_matches_the_load_log() -> None:
    """llama.cpp's load of Meta-Llama-3.1-8B-Instruct Q4_K_M (tests/data/reference/engine-logs.yaml,
    llamacpp-securetag): CPU model buffer 281.81 MiB (token_embd), CUDA0 4403.49 MiB (32 blocks and
    the output head)."""
    spec = catalog_spec("Llama-3.1-8B")
    blocks, embd, output = gguf_layer_bytes(spec, "Q4_K_M")
    assert embd / MIB == pytest.approx(281.81, abs=0.01)
    # output_norm (16 KiB) and rope_freqs (256 B), on the GPU too, are not in the output head's bytes
    assert (sum(blocks) + output) / MIB == pytest.approx(4403.49 - 0.016, abs=0.006)
    stored = estimated_layers(spec, weight_format(spec, "Q4_K_M"))
    assert stored.layer_bytes == blocks and stored.output_bytes == output


def test_gguf_weight_format_totals_the_file() -> None:
    """weights_bytes under a GGUF dtype is the sum of the typed tensors (norms F32), within 0.1%."""
    spec = catalog_spec("Qwen3-32B")
    fmt = weight_format(spec, "q4_k_m")
    total = weights_bytes(spec, fmt, 1) - rope_cache_bytes(spec, fmt)
    assert total == pytest.approx(gguf_file_bytes(spec, "Q4_K_M"), rel=1e-6)


@pytest.mark.parametrize(("text", "name"), [("q4_k_m", "Q4_K_M"), ("Q8_0", "Q8_0"), ("mxfp4_moe", "MXFP4")])
def test_spellings(text: str, name: str) -> None:
    assert ftype_name(text) == name
    assert weight_dtype(text) == name


def test_unknown_dtype_points_at_gguf_names() -> None:
    with pytest.raises(InputError, match="GGUF type"):
        weight_dtype("Q9_K")


def test_fit_takes_a_gguf_dtype() -> None:
    """`--dtype Q4_K_M` was refused ("unknown --dtype") before GGUF types were dtypes."""
    result = cli(
        "fit", "Llama-3.1-8B", "--gpu", "RTX4090", "--dtype", "Q4_K_M", "--engine", "llamacpp", "--json"
    )
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["memory"]["weights_bytes"] == pytest.approx((4403.49 - 0.016) * MIB, abs=0.006 * MIB)


def test_unknown_gguf_like_dtype_exits_2() -> None:
    result = cli("fit", "Llama-3.1-8B", "--gpu", "RTX4090", "--dtype", "Q4_K_Q")
    assert result.code == 2 and not result.stdout
    assert "GGUF type (Q4_K_M" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_ollama_gpt_oss_keeps_non_experts_bf16() -> None:
    """Ollama's gpt-oss:20b (convert_gptoss.go): MXFP4 experts, BF16 elsewhere, 1.7 GB above the
    llama.cpp MXFP4_MOE file (Q8_0 elsewhere: 12.1 GB, the size of ggml-org's gpt-oss-20b-mxfp4.gguf)."""
    spec = catalog_spec("gpt-oss-20b")
    m = quant_facts(spec)
    assert tensor_type("MXFP4_BF16", "attn_q", 0, m, 2880) == "BF16"
    assert tensor_type("MXFP4_BF16", "ffn_down", 0, m, 2880, experts=True) == "MXFP4"
    ollama = sum(
        sum(part) if isinstance(part, tuple) else part for part in gguf_layer_bytes(spec, "MXFP4_BF16")
    )
    llamacpp = sum(sum(part) if isinstance(part, tuple) else part for part in gguf_layer_bytes(spec, "MXFP4"))
    assert llamacpp / 1e9 == pytest.approx(12.1, abs=0.05)
    assert 1.4e9 < ollama - llamacpp < 2.0e9


def test_mixture_is_the_file_llama_quantize_writes(tmp_path: Path) -> None:
    """Block by block, the Q4_K_M arithmetic equals the tensor table of a Llama-3.1-8B Q4_K_M file
    (tests/gguf_files.py, the layout llama-quantize writes) as sources/gguf.py reads it."""
    path = tmp_path / "llama-3.1-8b-q4_k_m.gguf"
    llama31_8b_q4_k_m(path)
    stored = resolve_model(str(path)).stored_layers
    assert stored is not None
    blocks, embd, output = gguf_layer_bytes(catalog_spec("Llama-3.1-8B"), "Q4_K_M")
    assert (stored.layer_bytes, stored.token_embd_bytes, stored.output_bytes) == (blocks, embd, output)
