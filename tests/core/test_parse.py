"""ModelSpec parsing: variant spellings, nested configs and clear errors."""

from __future__ import annotations

from typing import Any

import pytest

from gpusize.core.parse import parse_config
from gpusize.errors import ConfigError
from tests.conftest import REFERENCE, load_reference


def _cfg(name: str) -> dict[str, Any]:
    return load_reference(REFERENCE / "configs" / name)["config"]


def test_explicit_head_dim_wins_over_hidden_over_heads() -> None:
    spec = parse_config(_cfg("mistralai__Mistral-Nemo-Instruct-2407.json"))
    assert spec.head_dim == 128 and spec.hidden_size // spec.num_attention_heads == 160


def test_gpt2_style_names_and_multi_query() -> None:
    spec = parse_config(_cfg("bigcode__gpt_bigcode-santacoder.json"))
    assert (spec.num_key_value_heads, spec.num_hidden_layers, spec.tie_word_embeddings) == (1, 24, True)
    assert spec.learned_position_embeddings == 2048


def test_nested_text_config_and_family_defaults() -> None:
    spec = parse_config(_cfg("google__gemma-3-27b-it.json"))
    assert spec.vocab_size == 262208  # Gemma3TextConfig default, absent from the file
    windows = [layer.window for layer in spec.attention_layers]
    assert windows.count(None) == 10 and windows.count(1024) == 52
    assert spec.vision is not None and spec.vision.exact


def test_qwen2_sliding_window_ignored_when_disabled() -> None:
    spec = parse_config(_cfg("Qwen__Qwen2.5-7B.json"))
    assert all(layer.window is None for layer in spec.layers)
    assert spec.qkv_bias and not spec.o_bias


def test_hybrid_layouts() -> None:
    nxt = parse_config(_cfg("Qwen__Qwen3-Next-80B-A3B-Instruct.json"))
    assert len(nxt.attention_layers) == 12
    nemo = parse_config(_cfg("nvidia__Nemotron-H-56B-Base-8K.json"))
    assert len(nemo.attention_layers) == 10 and sum(la.mixer == "mamba" for la in nemo.layers) == 54


@pytest.mark.parametrize(
    "config, message",
    [
        ({}, "non-empty JSON object"),
        ([], "non-empty JSON object"),
        ({"model_type": "llama"}, "missing 'hidden_size'"),
        ({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2}, "missing 'num_attention_heads'"),
        ({"model_type": "llama", "hidden_size": -1}, "at least 1"),
        ({"hidden_size": 64}, "missing 'model_type'"),
        ({"model_type": "t5", "hidden_size": 64}, "unsupported model_type 't5'"),
    ],
)
def test_bad_configs_raise_config_error(config: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(config)


def test_a_modelopt_sidecar_given_as_the_config_says_what_it_is() -> None:
    """NVIDIA ModelOpt's hf_quant_config.json ({"producer", "quantization"}) is read beside config.json
    (core/modelopt.py); given alone, the refusal names it instead of asking for a model_type."""
    sidecar = {"producer": {"name": "modelopt", "version": "0.37.0"}, "quantization": {"quant_algo": "NVFP4"}}
    with pytest.raises(ConfigError, match="ModelOpt hf_quant_config.json, not a model config"):
        parse_config(sidecar)
