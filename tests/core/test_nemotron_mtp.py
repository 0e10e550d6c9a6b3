"""Nemotron-3's MTP block as vLLM builds it (vllm/model_executor/models/nemotron_h_mtp.py,
`NemotronHMultiTokenPredictor`): one decoder layer per character of `mtp_hybrid_override_pattern`
(`*` NemotronHMTPAttentionDecoderLayer, `E` NemotronHMTPMoEDecoderLayer; Ultra and 3.5 write the
names in `mtp_layers_block_type`), each with its own norm; the first also holds enorm, hnorm and the
2h -> h eh_proj, the last the final_layernorm; embedding and lm_head are shared with the model."""

from __future__ import annotations

import pytest

from gpusize.core.params import layer_params
from tests.helpers import catalog_counts

#: Super's MTP attention sublayer: q and o 4096 x 4096, k and v 4096 x 256 (2 KV heads of 128), its
#: RMSNorm of 4096.
SUPER_MTP_ATTENTION = 2 * 4096 * 4096 + 2 * 4096 * 256 + 4096


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA-Nemotron-3-Super-120B-A12B",  # mtp_hybrid_override_pattern '*E'
        "NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",  # mtp_layers_block_type [attention, moe]
        "NVIDIA-Nemotron-3.5-Lightning-30B-A3B",
    ],
)
def test_mtp_block_is_an_attention_layer_then_an_moe_layer(name: str) -> None:
    spec, counts = catalog_counts(name)
    h = spec.hidden_size
    attention = next(layer for layer in spec.layers if layer.mixer == "attention")
    moe = next(layer for layer in spec.layers if layer.ffn == "moe")
    block = layer_params(spec, attention).total + layer_params(spec, moe).total
    assert counts.mtp == block + 3 * h + 2 * h * h


def test_super_mtp_attention_sublayer() -> None:
    spec, _ = catalog_counts("NVIDIA-Nemotron-3-Super-120B-A12B")
    attention = next(layer for layer in spec.layers if layer.mixer == "attention")
    assert layer_params(spec, attention).total == SUPER_MTP_ATTENTION == 35_655_680
