"""Quantized checkpoints: bytes per weight, what stays unquantized, TP refusals."""

from __future__ import annotations

from gpusize.core.parse import parse_config
from gpusize.core.weights import weight_format, weights_bytes
from tests.helpers import catalog_counts

BASE = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}


def test_awq_and_gptq_group_scales() -> None:
    spec = parse_config(
        {
            **BASE,
            "quantization_config": {
                "quant_method": "awq",
                "bits": 4,
                "group_size": 128,
                "modules_to_not_convert": ["self_attn"],
            },
        }
    )
    fmt = weight_format(spec, "auto")
    assert fmt.linear_bytes == 0.5 + 2 / 128 and "attention" in fmt.unquantized


def test_bitsandbytes_nf4() -> None:
    spec = parse_config(
        {**BASE, "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}}
    )
    assert spec.quantization is not None and spec.quantization.weight_bits == 4


def test_compressed_tensors_w4a16_and_fp8() -> None:
    spec, _ = catalog_counts("Llama-3.3-70B-Instruct-FP8-dynamic")
    assert weight_format(spec, "auto").name == "fp8"
    w4 = parse_config(
        {
            **BASE,
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}
                },
            },
        }
    )
    assert weight_format(w4, "auto").linear_bytes == 0.5 + 2 / 128


def test_runtime_fp8_keeps_embeddings_in_bf16() -> None:
    spec, counts = catalog_counts("Llama-3.1-8B")
    fp8 = weights_bytes(spec, weight_format(spec, "fp8"))
    bf16 = weights_bytes(spec, weight_format(spec, "bf16"))
    # embeddings + lm_head stay 2 bytes: 2 x 128256 x 4096 x 2 B
    assert fp8 > bf16 / 2 + 2 * 128256 * 4096 * 0.9
    assert abs(fp8 / 2**30 - 8.49) / 8.49 < 0.02  # vLLM llmd-v019-08 logged 8.49 GiB
