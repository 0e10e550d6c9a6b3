"""vLLM's multimodal budgets (core/engines/vllm/multimodal.py): worked examples from vLLM's code for
each term, the Qwen3-VL start-up logs as conformance cases on the encoder term, the text-only flag,
Qwen2-VL and Qwen2.5-VL parsed with their published parameter counts, and the flag on every command."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpusize.core import kvcache
from gpusize.core.engines import vllm
from gpusize.core.engines.vllm.multimodal import (
    ENCODER_APART_SINCE,
    MAX_PIXELS,
    TWO_FRAME_VIDEO_SINCE,
    EncoderBudget,
    encoder_budget,
    encoder_peak_bytes,
    encoder_profile,
    encoder_profile_bytes,
    max_item_tokens,
    mm_limits,
    profiled_budget,
    video_item_tokens,
    vision_replica,
)
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.core.vision import QWEN3_5_TOWERS
from gpusize.errors import InputError
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, run_in_process, workload
from tests.vllm_records import GIB, load_records, predict, residual, spec_of, workload_of

#: Qwen/Qwen2-VL-7B-Instruct config.json as on the Hub (the keys gpusize reads). Its vision_config
#: names the tower width `embed_dim` and the merged output `hidden_size`, with `mlp_ratio`.
QWEN2_VL_7B: dict[str, Any] = {
    "architectures": ["Qwen2VLForConditionalGeneration"],
    "model_type": "qwen2_vl",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "max_position_embeddings": 32768,
    "vocab_size": 152064,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vision_config": {
        "depth": 32,
        "embed_dim": 1280,
        "mlp_ratio": 4,
        "num_heads": 16,
        "in_chans": 3,
        "hidden_size": 3584,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "spatial_patch_size": 14,
        "temporal_patch_size": 2,
    },
}
#: Qwen/Qwen2.5-VL-7B-Instruct: the same text tower; a gated-MLP tower with RMSNorms.
QWEN2_5_VL_7B: dict[str, Any] = {
    **QWEN2_VL_7B,
    "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "model_type": "qwen2_5_vl",
    "max_position_embeddings": 128000,
    "vision_config": {
        "depth": 32,
        "hidden_act": "silu",
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "in_chans": 3,
        "out_hidden_size": 3584,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "spatial_patch_size": 14,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
        "temporal_patch_size": 2,
    },
}


# ------------------------------------------------------------------ worked examples from vLLM's code


@pytest.mark.parametrize(
    ("patch", "merge", "max_pixels", "tokens"),
    [
        (14, 2, 12845056, 16384),  # Qwen2-VL/2.5-VL preprocessor max_pixels: 3584 px = 128 x 28 a side
        (16, 2, 16777216, 16384),  # Qwen3-VL longest_edge: 4096 px = 128 x 32 a side
        (14, 2, 1003520, 1225),  # Qwen2VLImageProcessor's own default 28*28*1280: floor(1001.8/28) = 35
    ],
)
def test_largest_item_follows_smart_resize(patch: int, merge: int, max_pixels: int, tokens: int) -> None:
    spec = parse_config(QWEN2_VL_7B)
    assert spec.vision is not None
    v = type(spec.vision)(**{**spec.vision.__dict__, "patch_size": patch, "spatial_merge_size": merge})
    assert max_item_tokens(v, max_pixels) == tokens


@pytest.mark.parametrize(
    ("per_item", "batched", "seqs", "limit", "budget", "items"),
    [
        (16384, 8192, 256, 1, 16384, 1),  # the budget grows to one largest item
        (16384, 32768, 256, 999, 32768, 2),  # a larger batch holds two items
        (16384, 32768, 1, 1, 32768, 1),  # at most max_num_seqs x the per-prompt limit
        (1225, 8192, 256, 999, 8192, 6),  # small items: 8192 // 1225
    ],
)
def test_encoder_budget_rule(
    per_item: int, batched: int, seqs: int, limit: int, budget: int, items: int
) -> None:
    assert encoder_budget(per_item, batched, seqs, limit) == EncoderBudget(per_item, budget, items)


def test_qwen2_vl_profile_peak_worked_example() -> None:
    """One 16,384-token image = 65,536 patches of 3 x 2 x 14 x 14: fp32 + bf16 pixel values, the
    blocks over width 1280 + MLP 5120, and the 16,384 x 3584 bf16 encoder output."""
    spec = parse_config(QWEN2_VL_7B)
    assert spec.vision is not None
    eb = EncoderBudget(16384, 16384, 1)
    pixels = 65536 * 1176 * 6
    blocks = 2.80 * 65536 * (1280 + 5120) * 2
    cache = 16384 * 3584 * 2
    assert encoder_profile_bytes(spec.vision, spec.hidden_size, eb) == int(pixels + blocks + cache)
    assert 2.6 < (pixels + blocks + cache) / GIB < 2.8


# ------------------------------------------------------------------ the flag's forms


@pytest.mark.parametrize(
    ("raw", "limits"),
    [
        ('{"image":0,"video":0}', {"image": 0, "video": 0}),
        ("image=0,video=0", {"image": 0, "video": 0}),
        (' { "image" : 4 } ', {"image": 4}),
        ('{"video": {"count": 1, "num_frames": 32}}', {"video": 1}),
        (None, None),
    ],
)
def test_limits_read_as_vllm_takes_them(raw: str | None, limits: dict[str, int] | None) -> None:
    assert mm_limits(raw) == limits


@pytest.mark.parametrize(
    "raw", ["image", "image=x", '{"image": -1}', '{"image": true}', "[1]", "{", "=1", "\x1b"]
)
def test_bad_limits_are_refused_in_one_line(raw: str) -> None:
    with pytest.raises(InputError, match="--limit-mm-per-prompt") as err:
        mm_limits(raw)
    assert "\n" not in str(err.value) and "\x1b" not in str(err.value)


# ------------------------------------------------------------------ conformance: the start-up logs

#: Qwen3-VL-30B-A3B at TP=2 (vLLM 0.11-0.12, 64 and 256 sequences): what the log leaves beyond
#: gpusize's other terms is the encoder term; the reserve must be within 10% of it.
QWEN3_VL_TP2 = [
    "vllm-zzsf-qwen3vl30b-tp2-a",
    "vllm-zzsf-qwen3vl30b-tp2-b",
    "vllm-zzsf-qwen3vl30b-tp2-c",
    "vllm-zzsf-qwen3vl30b-tp2-d",
]
_RECORDS = {r["id"]: r for r in load_records()}


def _encoder_terms(rec_id: str) -> tuple[float, float]:
    rec = _RECORDS[rec_id]
    spec = spec_of(rec)
    work = workload_of(rec, spec)
    held = encoder_profile(spec, find_gpu(rec["gpu"]), rec["tensor_parallel_size"], work)
    r = residual(rec)
    assert held is not None and r is not None
    modelled = held.bytes / GIB
    others = r.sampler_copies * r.sampler_copy + r.rest - modelled
    return r.logged - others, modelled


@pytest.mark.parametrize("rec_id", QWEN3_VL_TP2)
def test_encoder_term_within_ten_percent_of_the_log(rec_id: str) -> None:
    logged, modelled = _encoder_terms(rec_id)
    assert 2.6 < logged < 2.7
    assert abs(modelled - logged) / logged <= 0.10, (modelled, logged)


def test_encoder_term_at_tp1_stays_on_the_safe_side() -> None:
    """The TP=1 log leaves 2.16 GiB: the replicated-tower estimate is above it (+21%), never below."""
    logged, modelled = _encoder_terms("vllm-zzsf-qwen3vl30b-tp1")
    assert logged < modelled < 1.25 * logged


# ------------------------------------------------------------------ Qwen3.5's tower: the peaks apart (0.19)

QWEN3_5_TOC = "vllm-lambo-4x3090-qwen35-27b-toc"
#: The same 4x RTX 3090 server at vLLM's default limits (256 sequences, 2,048 batched tokens).
QWEN3_5_DEFAULT = [
    "vllm-lambo-4x3090-qwen35-27b",
    "vllm-lambo-4x3090-qwen35-27b-v4",
    "vllm-lambo-4x3090-qwen35-27b-v5",
]


def _kv_error(rec_id: str) -> float:
    rec = _RECORDS[rec_id]
    predicted = predict(rec).kv_cache_capacity_tokens
    logged = rec["measured"]["gpu_kv_cache_tokens"]
    assert predicted is not None
    return float((predicted - logged) / logged)


def test_qwen3_5_one_sequence_floor_is_the_encoder_peak() -> None:
    """Qwen3.5-27B at TP=4 with max_num_seqs 1 (vLLM 0.19.0): the log leaves 1.12 GiB for the
    start-up peak where the decoder and its sampler need 0.02 GiB; the floor is the encoder on the
    largest image (16,384 tokens), per rank. With the encoder cache alone gpusize was +13.4%."""
    rec = _RECORDS[QWEN3_5_TOC]
    spec = spec_of(rec)
    held = encoder_profile(spec, find_gpu(rec["gpu"]), 4, workload_of(rec, spec))
    assert held is not None and 0.8 * GIB < held.bytes < 1.0 * GIB
    assert abs(_kv_error(QWEN3_5_TOC)) <= 0.03, _kv_error(QWEN3_5_TOC)


@pytest.mark.parametrize("rec_id", QWEN3_5_DEFAULT)
def test_qwen3_5_default_limits_keep_the_decoder_peak(rec_id: str) -> None:
    """At 256 sequences the sampler's peak is above the encoder's: the log leaves what the decoder
    needs, and the reserve is the little the encoder's peak is above it."""
    assert abs(_kv_error(rec_id)) <= 0.025, _kv_error(rec_id)


def test_qwen3_5_peak_per_rank_worked_example() -> None:
    """Qwen3.5-27B's tower (width 1152, MLP 4304, no deepstack) on one 16,384-token image: 65,536
    patches of 3 x 2 x 16 x 16 bf16 pixel values, and the blocks' copies of the whole residual
    width plus the MLP width split four ways."""
    v = catalog_spec("Qwen3.5-27B").vision
    assert v is not None and v.model_type in QWEN3_5_TOWERS and v.deepstack_layers == 0
    eb = EncoderBudget(16384, 16384, 1)
    pixels = 65536 * 1536 * 2
    assert encoder_peak_bytes(v, eb, 4) == int(pixels + 2.80 * 65536 * (1152 + 4304 / 4) * 2)
    assert encoder_peak_bytes(v, eb, 1) == int(pixels + 2.80 * 65536 * (1152 + 4304) * 2)
    assert 0.9 < encoder_peak_bytes(v, eb, 4) / GIB < 1.0


def test_the_reserve_is_the_encoder_peak_above_the_decoder_from_0_19() -> None:
    spec = catalog_spec("Qwen3.5-27B")
    gpu = find_gpu("RTX3090")
    assert spec.vision is not None
    work = workload(spec, 32768, version="0.19.0", max_num_seqs=1)
    eb = profiled_budget(spec, gpu, work)
    assert eb == EncoderBudget(16384, 16384, 1, "image")
    beh = vllm.behaviour_of(work, spec)
    decoder = vllm.activation_bytes(spec, vllm.scheduler_limits(gpu, work, beh, spec), 4, True, beh)
    held = encoder_profile(spec, gpu, 4, work)
    assert held is not None and held.bytes == encoder_peak_bytes(spec.vision, eb, 4) - decoder
    assert str(ENCODER_APART_SINCE) == "0.19.0"
    before = encoder_profile(spec, gpu, 4, workload(spec, 32768, version="0.18.0", max_num_seqs=1))
    assert before is not None and before.bytes == encoder_profile_bytes(spec.vision, spec.hidden_size, eb)


def test_items_per_prompt_are_capped_by_the_context() -> None:
    """MultiModalBudget._get_max_items: items per prompt = max(1, min(limit, max_model_len //
    tokens per item)), so one sequence of 16,384 tokens profiles one 16,384-token image even when
    the budget holds two."""
    assert encoder_budget(16384, 32768, 1, 999, context=16384) == EncoderBudget(16384, 32768, 1)
    assert encoder_budget(16384, 32768, 1, 999, context=32768) == EncoderBudget(16384, 32768, 2)
    assert encoder_budget(16384, 32768, 1, 999) == EncoderBudget(16384, 32768, 2)


# ------------------------------------------------------------------ --mm-encoder-tp-mode data


def _qwen3_5_tp4(**settings: object) -> dict[str, int]:
    spec = catalog_spec("Qwen3.5-27B")
    work = workload(spec, 32768, version="0.19.0", max_num_seqs=1, **settings)
    per_gpu = vllm.evaluate(spec, find_gpu("RTX3090"), 4, work).per_gpu
    assert per_gpu is not None
    return {r.name: r.bytes for r in per_gpu.reserves}


def test_data_mode_keeps_the_tower_whole_on_every_rank() -> None:
    """--mm-encoder-tp-mode data: each of the 4 ranks loads the whole tower (3/4 of it beyond its
    weights share) and the one image runs on one rank through the whole tower."""
    spec = catalog_spec("Qwen3.5-27B")
    assert spec.vision is not None
    split, data = _qwen3_5_tp4(), _qwen3_5_tp4(mm_encoder_tp_mode="data")
    assert "vision_replica" not in split
    assert data["vision_replica"] == int(spec.params.vision * 2 * (1 - 1 / 4))
    eb = EncoderBudget(16384, 16384, 1, "image")
    whole, shared = encoder_peak_bytes(spec.vision, eb, 1), encoder_peak_bytes(spec.vision, eb, 4)
    assert data["encoder_profile"] - split["encoder_profile"] == whole - shared
    assert _qwen3_5_tp4(mm_encoder_tp_mode="weights") == split
    text = _qwen3_5_tp4(mm_encoder_tp_mode="data", language_model_only=True)
    assert text == {}


def test_data_mode_splits_the_items_across_ranks() -> None:
    """Three items over two ranks: every rank holds the three items' pixel values and runs two."""
    v = catalog_spec("Qwen3.5-27B").vision
    assert v is not None
    three, two = EncoderBudget(16384, 49152, 3), EncoderBudget(16384, 32768, 2)
    pixels = 65536 * 1536 * 2
    assert encoder_peak_bytes(v, three, 1, ranks=2) == encoder_peak_bytes(v, two, 1) + pixels


def test_data_mode_falls_back_for_other_towers_and_one_gpu() -> None:
    spec = catalog_spec("gemma-3-27b-it")
    work = workload(spec, 8192, mm_encoder_tp_mode="data")
    assert vision_replica(spec, find_gpu("H100"), 2, work) is None  # SigLIP: vLLM keeps "weights"
    qwen = catalog_spec("Qwen3.5-27B")
    assert vision_replica(qwen, find_gpu("H100"), 1, workload(qwen, 8192, mm_encoder_tp_mode="data")) is None


def test_the_mode_flag_is_checked_and_launched() -> None:
    args = ["fit", "Qwen3.5-27B", "--gpu", "H100", "--tp", "2", "--ctx", "8k"]
    ok = run_in_process(*args, "--mm-encoder-tp-mode", "data", "--json")
    assert ok.code in (0, 1), ok.stderr
    assert json.loads(ok.stdout)["workload"]["engine"]["mm_encoder_tp_mode"] == "data"
    served = run_in_process(
        "serve",
        "Qwen3.5-27B",
        "--gpu",
        "H100",
        "--ctx",
        "8k",
        "--users",
        "4",
        "--mm-encoder-tp-mode",
        "data",
        "--json",
    )
    assert "--mm-encoder-tp-mode data" in json.dumps(json.loads(served.stdout)["launch"])
    bad = run_in_process(*args, "--mm-encoder-tp-mode", "both")
    assert bad.code == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    old = run_in_process(*args, "--mm-encoder-tp-mode", "data", "--engine-version", "0.11.0")
    assert old.code == 2 and old.stdout == ""


# ------------------------------------------------------------------ text-only and other towers


def _reserve_names(name: str, **settings: object) -> dict[str, int]:
    spec = catalog_spec(name)
    cand = vllm.evaluate(spec, find_gpu("H100"), 1, workload(spec, 8192, **settings))
    return {r.name: r.bytes for r in cand.per_gpu.reserves}


def spec_kv_bytes(spec: ModelSpec) -> int:
    return kvcache.kv_cache_bytes_per_token(spec, 2)


def test_text_only_removes_the_reserve_and_frees_kv() -> None:
    """At 0.12.0, where the encoder's term adds to the decoder's (ENCODER_APART_SINCE)."""
    spec = catalog_spec("Qwen3-VL-8B-Instruct")
    gpu = find_gpu("H100")
    full = vllm.evaluate(spec, gpu, 1, workload(spec, 8192, version="0.12.0"))
    text_work = workload(spec, 8192, version="0.12.0", limit_mm_per_prompt='{"image":0,"video":0}')
    text = vllm.evaluate(spec, gpu, 1, text_work)
    held = {r.name: r.bytes for r in full.per_gpu.reserves}["encoder_profile"]
    assert held > 2 * GIB and text.per_gpu.reserves == ()
    assert full.kv_cache_capacity_tokens and text.kv_cache_capacity_tokens
    freed = (text.kv_cache_capacity_tokens - full.kv_cache_capacity_tokens) * spec_kv_bytes(spec)
    # ... and the vision tower, which vLLM does not build text-only (multimodal.TOWER_SKIPPED_SINCE).
    tower = full.per_gpu.weights_bytes - text.per_gpu.weights_bytes
    assert spec.vision is not None and tower == spec.params.vision * 2
    assert freed == pytest.approx(held + tower, abs=2 << 20)  # within a block of 16 tokens


def test_one_modality_left_keeps_the_reserve() -> None:
    assert "encoder_profile" in _reserve_names("Qwen3-VL-8B-Instruct", limit_mm_per_prompt="image=0,video=1")
    assert _reserve_names("Qwen3-8B") == {}


def test_other_towers_keep_the_encoder_cache_alone() -> None:
    """Gemma 3 (SigLIP, 256 tokens an image): max_num_batched_tokens x text hidden x 2 B."""
    held = _reserve_names("gemma-3-27b-it")["encoder_profile"]
    assert held == 8192 * catalog_spec("gemma-3-27b-it").hidden_size * 2


# ------------------------------------------------------------------ Qwen2-VL parses


@pytest.mark.parametrize(
    ("config", "total"),
    [(QWEN2_VL_7B, 8_291_375_616), (QWEN2_5_VL_7B, 8_292_166_656)],  # Hub safetensors totals
)
def test_qwen2_vl_families_parse_with_their_published_counts(config: dict[str, Any], total: int) -> None:
    spec = parse_config(config)
    assert spec.vision is not None and spec.vision.exact
    assert spec.params.total == total
    assert max_item_tokens(spec.vision, MAX_PIXELS[spec.vision.model_type]) == 16384


# ------------------------------------------------------------------ every command takes the flag

TEXT_ONLY = '{"image":0,"video":0}'
COMMANDS = {
    "fit": ["fit", "Qwen3-VL-8B-Instruct", "--gpu", "H100", "--ctx", "8k"],
    "serve": ["serve", "Qwen3-VL-8B-Instruct", "--gpu", "H100", "--ctx", "8k", "--users", "4"],
    "quote": ["quote", "Qwen3-VL-8B-Instruct", "--gpu", "H100", "--ctx", "8k", "--users", "4"],
    "curve": ["curve", "Qwen3-VL-8B-Instruct", "--gpu", "H100"],
    "which": ["which", "--gpu", "H100", "--ctx", "8k"],
}


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "which"])
def test_every_command_takes_the_flag(command: str) -> None:
    result = run_in_process(*COMMANDS[command], "--limit-mm-per-prompt", TEXT_ONLY, "--json")
    assert result.code in (0, 1), result.stderr
    assert json.loads(result.stdout)["workload"]["engine"]["limit_mm_per_prompt"] == TEXT_ONLY
    bad = run_in_process(*COMMANDS[command], "--limit-mm-per-prompt", "image=x")
    assert bad.code == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1


def test_which_serves_the_vision_models_text_only() -> None:
    def capacity(*flags: str) -> int:
        data = json.loads(run_in_process(*COMMANDS["which"], *flags, "--json").stdout)
        (row,) = (m for m in data["models"] if m["name"] == "Qwen3-VL-8B-Instruct")
        return int(row["kv_cache_capacity_tokens"])

    assert capacity("--limit-mm-per-prompt", TEXT_ONLY) > capacity()
    bad = run_in_process(*COMMANDS["which"], "--limit-mm-per-prompt", "image=x")
    assert bad.code == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1


def test_json_names_the_reserve_in_bytes_and_the_launch_carries_the_flag() -> None:
    data = json.loads(run_in_process(*COMMANDS["fit"], "--json").stdout)
    (held,) = data["memory"]["reserves"]
    # The newest release: what the encoder's peak leaves above the decoder's (ENCODER_APART_SINCE).
    assert held["name"] == "encoder_profile" and held["bytes"] > 0 and held["estimate"] is True
    text = json.loads(run_in_process(*COMMANDS["fit"], "--limit-mm-per-prompt", TEXT_ONLY, "--json").stdout)
    assert text["memory"]["reserves"] == []
    served = json.loads(
        run_in_process(*COMMANDS["serve"], "--limit-mm-per-prompt", TEXT_ONLY, "--json").stdout
    )
    assert f"--limit-mm-per-prompt '{TEXT_ONLY}'" in served["launch"]["vllm"]["command"]


@pytest.mark.parametrize("text_type", ["qwen2_vl_text", None])
def test_qwen2_vl_nested_text_config_parses_alike(text_type: str | None) -> None:
    """Newer transformers save Qwen2-VL with a nested text_config (model_type qwen2_vl_text, or none:
    the composite's family) and a vision_config naming its model_type."""
    text = {k: v for k, v in QWEN2_VL_7B.items() if k not in ("architectures", "model_type", "vision_config")}
    nested = {
        "architectures": ["Qwen2VLForConditionalGeneration"],
        "model_type": "qwen2_vl",
        "text_config": {**text, **({"model_type": text_type} if text_type else {})},
        "vision_config": {**QWEN2_VL_7B["vision_config"], "model_type": "qwen2_vl"},
    }
    spec = parse_config(nested)
    assert spec.params.total == 8_291_375_616
    assert spec.vision is not None and (spec.vision.hidden_size, spec.vision.out_hidden_size) == (1280, 3584)


@pytest.mark.parametrize(
    ("context", "images", "videos", "tokens"),
    [
        (128000, 0, 1, 114688),  # vLLM's log at 128,000 tokens: {'image': 16384, 'video': 114688}
        (65536, 1, 1, 49152),  # the image's 16,384 first, then three pairs of frames
        (8192, 999, 999, 16384),  # no room: one pair of frames
        (131072, 0, 2, 65536),  # two videos share the context
    ],
)
def test_largest_video_fills_the_context(context: int, images: int, videos: int, tokens: int) -> None:
    assert video_item_tokens(16384, context, images, videos) == tokens


def _profiled(ctx: int, limits: str | None, version: str = "0.12.0") -> EncoderBudget:
    spec = catalog_spec("Qwen3-VL-8B-Instruct")
    work = workload(spec, ctx, limit_mm_per_prompt=limits, version=version)
    eb = profiled_budget(spec, find_gpu("H100"), work)
    assert eb is not None
    return eb


def test_the_modality_with_the_most_tokens_is_profiled() -> None:
    """Up to 0.18 (read in 0.12.0) the largest video fills the context with frames."""
    assert _profiled(65536, None) == EncoderBudget(16384, 16384, 1, "image")  # 999 images: no room
    assert _profiled(65536, '{"image":1,"video":1}') == EncoderBudget(49152, 49152, 1, "video")
    assert _profiled(65536, '{"image":0,"video":1}') == EncoderBudget(65536, 65536, 1, "video")
    assert _profiled(65536, '{"image":2,"video":0}') == EncoderBudget(16384, 16384, 1, "image")


def test_the_dummy_video_is_two_frames_from_0_19() -> None:
    """Qwen3VLDummyInputsBuilder (0.19.0): two frames at 25,165,824 // 2 pixels: a 3520 px square,
    110 x 110 merged tokens = 12,100, whatever the context; the image (16,384) is the larger."""
    assert str(TWO_FRAME_VIDEO_SINCE) == "0.19.0"
    assert _profiled(65536, '{"image":0,"video":1}', "0.19.0") == EncoderBudget(12100, 12100, 1, "video")
    assert _profiled(65536, '{"image":1,"video":1}', "0.19.0") == EncoderBudget(16384, 16384, 1, "image")
    assert _profiled(131072, '{"image":0,"video":4}', "0.19.0") == EncoderBudget(12100, 12100, 1, "video")
