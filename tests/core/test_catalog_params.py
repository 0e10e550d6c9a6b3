"""Every catalog model's config-derived parameter count against its published total, exactly.

An entry with `params_published` either reproduces it exactly, or is listed in GAPS: its published
total counts tensors the config does not describe (a stored duplicate lm_head, an MTP layer and its
stored copies, FP8 scale tensors, a vision tower gpusize estimates), its `params_source` says so, and
the gap is pinned here (computed from its parts where they are computable). A new mismatch, or a gap
that closes, fails.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpusize.core.params import count_params
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec, ParamCounts
from gpusize.core.vision import Tower, qwen3_vl_vision_params
from gpusize.sources.catalog import CatalogModel, load_models


def _lm_head(spec: ModelSpec, _: ParamCounts) -> int:
    return spec.vocab_size * spec.hidden_size


def _mtp_and_copies(spec: ModelSpec, counts: ParamCounts) -> int:
    """GLM-4.5 / 4.7 store the MTP layer with its own copy of the embedding and of the head."""
    return counts.mtp + 2 * spec.vocab_size * spec.hidden_size


def _fixed(gap: int) -> Callable[[ModelSpec, ParamCounts], int]:
    return lambda _spec, _counts: gap


#: DeepSeek-V3/R1/V3.1: MTP layer (computed) + the F32 weight_scale_inv tensors of the FP8 blocks.
_DEEPSEEK_FP8_SCALES = 1_894_898_576


def _channel_scales(spec: ModelSpec, _: ParamCounts) -> int:
    """FP8 'dynamic' (compressed-tensors, channel strategy): one F32 weight_scale per output channel
    of every quantized linear (q, k, v, o, gate, up, down); the head and embeddings stay BF16."""
    q = spec.num_attention_heads * spec.head_dim
    kv = 2 * spec.num_key_value_heads * spec.head_dim
    per_layer = q + kv + spec.hidden_size + 2 * spec.intermediate_size + spec.hidden_size
    return spec.num_hidden_layers * per_layer


#: name -> (word the entry's params_source must contain, the gap published - config-derived).
GAPS: dict[str, tuple[str, Callable[[ModelSpec, ParamCounts], int]]] = {
    "Qwen3-0.6B": ("lm_head", _lm_head),
    "Qwen3-1.7B": ("lm_head", _lm_head),
    "Qwen3-Next-80B-A3B-Instruct": ("MTP", _fixed(1_650_471_424)),  # gpusize does not size its MTP
    "DeepSeek-V3": ("MTP", lambda _s, c: c.mtp + _DEEPSEEK_FP8_SCALES),
    "DeepSeek-R1": ("MTP", lambda _s, c: c.mtp + _DEEPSEEK_FP8_SCALES),
    "DeepSeek-V3.1": ("MTP", lambda _s, c: c.mtp + _DEEPSEEK_FP8_SCALES),
    # + the F32 scales of the indexers' FP8 wq_b and wk: 62 layers x (12 x 64 + 56 x 1)
    "DeepSeek-V3.2": ("MTP", lambda _s, c: c.mtp + _DEEPSEEK_FP8_SCALES + 62 * (12 * 64 + 56)),
    "GLM-5": ("MTP", lambda _s, c: c.mtp),  # bf16 checkpoint: the MTP layer alone
    "GLM-4.5-Air": ("MTP", _mtp_and_copies),
    "GLM-4.5": ("MTP", _mtp_and_copies),
    "GLM-4.7": ("MTP", _mtp_and_copies),
    "GLM-4.6": ("MTP", lambda _s, c: c.mtp),  # this checkpoint stores no copies
    "Kimi-K2-Instruct": ("scale", _fixed(62_498_608)),
    "Kimi-K2-Instruct-0905": ("scale", _fixed(62_503_000)),  # 4,392 more than the July release
    "Qwen3-235B-A22B-FP8": ("scale", _fixed(14_269_952)),
    "MiniMax-M2": ("scale", _fixed(13_880_064)),  # 128x128 blocks: experts 13,713,408 + attention 166,656
    "MiniMax-M2.5": ("scale", _fixed(13_880_064)),  # the same architecture and FP8 blocks as M2
    "MiniMax-M2.7": ("scale", _fixed(13_880_064)),
    "Kimi-VL-A3B-Instruct": ("estimate", _fixed(28_849_984)),  # MoonViT: generic ViT estimate
    "Kimi-VL-A3B-Thinking": ("estimate", _fixed(28_849_984)),
    # FP8 scale elements: 36 layers x (512 BF16 + 16 F32), inferred from the Hub's dtype totals
    "Mistral-Small-4-119B-2603": ("scale", _fixed(19_008)),
    "Kimi-K3": ("A_log", _fixed(69 * 32)),  # A_log stored as 128 entries for 96 heads per KDA layer
    "Llama-3.3-70B-Instruct-FP8-dynamic": ("weight_scale", _channel_scales),  # 80 x 83,968 = 6,717,440
    # Model-card totals rounded to 0.1B / 1B (no Hub safetensors total at hand): the gap is the rounding
    # plus what the card leaves out (Gemma 4: its vision tower, 572,794,416 / 575,743,536 here).
    "gemma-4-26B-A4B-it": ("vision", _fixed(-605_936_176)),
    "gemma-4-31B-it": ("vision", _fixed(-573_088_816)),
    "MiMo-V2-Flash": ("rounded", _fixed(221_219_136)),
    "Step-3.7-Flash": ("rounded", _fixed(167_287_744)),
    "MiniMax-M3": ("vision", _fixed(1_825_427_072)),
    # Qwen3.5 / 3.6: the Hub totals count the MTP layer, which gpusize does not size (vision included)
    "Qwen3.5-27B": ("MTP", lambda _s, c: c.mtp),
    "Qwen3.5-35B-A3B": ("MTP", lambda _s, c: c.mtp),
    "Qwen3.5-122B-A10B": ("MTP", lambda _s, c: c.mtp),
    "Qwen3.5-397B-A17B": ("MTP", lambda _s, c: c.mtp),
    "Qwen3.6-27B": ("MTP", lambda _s, c: c.mtp),
    "Qwen3.6-35B-A3B": ("MTP", lambda _s, c: c.mtp),
    # Nemotron 3: the Hub totals leave out the routers' e_score_correction_bias (n_routed_experts per
    # MoE layer); Super's also counts its MTP block ('*E': attention + MoE, as vLLM builds it), so its
    # gap is that block less the biases of 40 MoE layers and the MTP's own
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("e_score_correction_bias", _fixed(-23 * 128)),
    "NVIDIA-Nemotron-3-Super-120B-A12B": ("e_score_correction_bias", lambda _s, c: c.mtp - 41 * 512),
}

MODELS = load_models()
PUBLISHED = [m for m in MODELS if m.params_published is not None]


def test_most_published_counts_match_exactly() -> None:
    exact = [m for m in PUBLISHED if m.name not in GAPS]
    assert len(MODELS) >= 120 and len(exact) >= 100


@pytest.mark.parametrize("entry", PUBLISHED, ids=lambda m: m.name)
def test_published_total_is_reproduced_or_its_gap_explained(entry: CatalogModel) -> None:
    spec = parse_config(entry.config)
    counts = count_params(spec)
    assert entry.params_published is not None
    gap = entry.params_published - counts.total
    if entry.name not in GAPS:
        assert gap == 0, f"{entry.name}: config gives {counts.total:,}, published {entry.params_published:,}"
        return
    word, expected = GAPS[entry.name]
    assert gap == expected(spec, counts)
    assert word.lower() in (entry.params_source or "").lower()


def test_every_gap_belongs_to_a_catalog_entry_with_a_published_total() -> None:
    assert set(GAPS) <= {m.name for m in PUBLISHED}


def test_entries_without_a_published_count_say_why_or_cite_nothing() -> None:
    """A null params_published comes with its reason (no figure found, or the figure seen and why it
    was rejected), or with no params_source at all."""
    for entry in MODELS:
        if entry.params_published is None and entry.params_source:
            assert entry.params_source.lower().startswith(("no ", "none")), entry.name


def test_every_entry_has_a_published_count_or_says_why_not() -> None:
    """Issue 26: an entry without an exact published total still carries a params_source, saying what
    was found (a rounded model-card figure and whether the config-derived total agrees with it) or
    what was searched."""
    silent = [m.name for m in MODELS if m.params_published is None and not (m.params_source or "").strip()]
    assert silent == []


def test_qwen3_vl_tower_is_exact_layer_by_layer() -> None:
    """Qwen3-VL-8B: h 1152, i 4304, 27 blocks, 16px patches over 2 frames, 2304 learned positions,
    2x2 merge to 4096 wide, 3 deepstack mergers = 576,388,336 (the Hub total 8,767,123,696 minus the
    text tower)."""
    tower = Tower(
        model_type="qwen3_vl",
        hidden_size=1152,
        intermediate_size=4304,
        num_hidden_layers=27,
        num_channels=3,
        patch_size=16,
        image_size=224,
        temporal_patch_size=2,
        num_position_embeddings=2304,
        out_hidden_size=4096,
        spatial_merge_size=2,
        deepstack_layers=3,
    )
    assert qwen3_vl_vision_params(tower) == 576_388_336
    for entry in MODELS:
        if entry.config["model_type"] in ("qwen3_vl", "qwen3_vl_moe"):
            vision = parse_config(entry.config).vision
            assert vision is not None and vision.exact, entry.name


#: Issue 26: the multimodal families whose towers gpusize reads exactly (config-derived, not estimated).
EXACT_TOWER_TYPES = (
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen3_vl_moe",
    "qwen3_5",
    "qwen3_5_moe",
    "gemma4",
    "llama4",
)


def test_multimodal_families_read_their_towers_exactly() -> None:
    """Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5/3.6, Gemma 4 and Llama-4 entries: each has a tower and
    it is counted exactly; Qwen2-VL-7B's and Qwen2.5-VL-3B's totals (tower included) match the Hub's."""
    towers = {}
    for entry in MODELS:
        if entry.config["model_type"] in EXACT_TOWER_TYPES:
            vision = parse_config(entry.config).vision
            assert vision is not None and vision.exact, entry.name
            towers[entry.name] = vision.params
    assert towers["Qwen2-VL-7B-Instruct"] == 675_759_104
    assert towers["Qwen2.5-VL-3B-Instruct"] == 668_684_288
    assert set(EXACT_TOWER_TYPES) <= {m.config["model_type"] for m in MODELS}
