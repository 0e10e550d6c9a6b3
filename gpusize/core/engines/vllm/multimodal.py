"""vLLM's multimodal budgets (pure): the items per prompt (`--limit-mm-per-prompt`), the largest item's
tokens from the processor numbers, the encoder budget, and the encoder profile peak as a Reserve.

vLLM's profile run (vllm/v1/worker/gpu_model_runner.py profile_run) first runs the vision encoder
on a dummy batch of the modality with the most tokens per item, as many items of the maximum
feature size as the encoder budget holds (capped by max_num_seqs x the per-prompt limit), keeps
their outputs in the encoder cache, then runs the decoder's dummy batch. The start-up logs move
with the decoder's peak on top of the encoder's (Qwen3-VL at 64 and 256 sequences: +0.91 GiB logged,
+0.95 modelled), so the encoder term is a reserve beside the activation peak. With 0 items of every
modality vLLM skips the encoder profile (the model is served text-only) and the reserve goes.

From ENCODER_APART_SINCE the logs show the encoder's peak apart from the decoder's: the profile run
frees the encoder's activations before the decoder's dummy batch, so the start-up peak is the larger
of the two and the reserve is what the encoder's peak (per rank: vLLM splits the vision blocks across
the tensor-parallel ranks, mm_encoder_tp_mode "weights") leaves above the decoder's.
"""

from __future__ import annotations

import json
import math
from typing import NamedTuple

from gpusize.core.engines.vllm.behaviour import behaviour_of
from gpusize.core.engines.vllm.overhead import activation_bytes
from gpusize.core.engines.vllm.scheduler import scheduler_limits
from gpusize.core.gpu import GpuSpec
from gpusize.core.releases import parse_version
from gpusize.core.reserves import Reserve
from gpusize.core.spec import ModelSpec, VisionSpec
from gpusize.core.vision import MOONVIT3D, QWEN2_VL_TOWERS, QWEN3_5_TOWERS, QWEN3_VL_TOWERS, QWEN_VL_TOWERS
from gpusize.core.workload import Workload
from gpusize.errors import InputError
from gpusize.units import GIB

__all__ = [
    "DATA_PARALLEL_TOWERS",
    "DEFAULT_LIMIT",
    "ENCODER_APART_SINCE",
    "MAX_PIXELS",
    "MODALITIES",
    "PIXEL_BYTES",
    "PROCESSED_PIXEL_BYTES",
    "SIZED_TOWERS",
    "TOWER_SKIPPED_SINCE",
    "TWO_FRAME_VIDEO_SINCE",
    "VIDEO_MAX_PIXELS",
    "VISION_ACTIVATION_COPIES",
    "EncoderBudget",
    "encoder_budget",
    "encoder_data_parallel",
    "encoder_peak_bytes",
    "encoder_profile",
    "encoder_profile_bytes",
    "max_item_tokens",
    "mm_limits",
    "profiled_budget",
    "skipped_tower_bytes",
    "text_only",
    "video_item_tokens",
    "vision_replica",
]

#: The modalities a vision-language checkpoint takes in vLLM (`limit_mm_per_prompt` keys), in the
#: order vLLM's processors list them.
MODALITIES = ("image", "video")
#: Items per prompt of a modality the flag does not name: vLLM V1's default (999; MultiModalConfig).
DEFAULT_LIMIT = 999
#: Largest image the processor keeps (pixels), per tower, from the checkpoints' preprocessor_config.json
#: on the Hub: Qwen2-VL / Qwen2.5-VL "max_pixels": 12845056 (= 3584^2; 16,384 tokens at 14 px patches
#: merged 2x2), Qwen3-VL "size": {"longest_edge": 16777216} (= 4096^2; 16,384 tokens at 16 px).
#: Qwen3.5 / Qwen3.6 ship Qwen3-VL's processor (preprocessor_config.json "processor_class":
#: "Qwen3VLProcessor", "size": {"longest_edge": 16777216}, patch 16, merge 2; vLLM qwen3_5.py
#: Qwen3_5ProcessingInfo subclasses Qwen3VLProcessingInfo): their logs print "Encoder cache will be
#: initialized with a budget of 16384 tokens, and profiled with 1 image items".
MAX_PIXELS: dict[str, int] = {
    "qwen2_vl": 12845056,
    "qwen2_5_vl": 12845056,
    "qwen3_vl": 16777216,
    "qwen3_vl_moe": 16777216,
    **dict.fromkeys(QWEN3_5_TOWERS, 16777216),
}
#: Largest video frame volume of the Qwen3-VL / Qwen3.5 / Qwen3.6 video processor
#: (video_preprocessor_config.json "video_processor_type": "Qwen3VLVideoProcessor", "size":
#: {"longest_edge": 25165824, "shortest_edge": 4096}), over all frames of a video.
VIDEO_MAX_PIXELS: dict[str, int] = dict.fromkeys(QWEN3_VL_TOWERS + QWEN3_5_TOWERS, 25165824)
#: From this release vLLM's dummy video for those towers is two frames (Qwen3VLDummyInputsBuilder
#: get_dummy_mm_data: "treat videos as special images", target_num_frames = 2) at the largest size
#: video_max_pixels // temporal_patch_size allows, and get_max_video_tokens counts the same: 12,100
#: tokens at 16 px patches merged 2x2 (read in the 0.19.0 wheel). 0.12.0 filled the context with
#: frames instead (Qwen2VLProcessingInfo.get_num_frames_with_most_features): the older rule,
#: `video_item_tokens`, stays for releases before (the larger, so the safer).
TWO_FRAME_VIDEO_SINCE = parse_version("0.19.0")
#: The towers whose largest item and encoder peak gpusize sizes from the processor numbers.
SIZED_TOWERS = QWEN_VL_TOWERS + QWEN3_5_TOWERS
#: Towers whose vLLM model takes --mm-encoder-tp-mode data (supports_encoder_tp_data = True in the
#: 0.19.0 wheel: qwen2_vl.py, qwen2_5_vl.py, qwen3_vl.py, whose class qwen3_5.py subclasses,
#: kimi_vl.py, kimi_k25.py, mllama4.py); vLLM falls back to "weights" for the others.
DATA_PARALLEL_TOWERS = (*SIZED_TOWERS, "moonvit", MOONVIT3D, "llama4_vision_model")
#: Bytes per pixel-value element held during the encoder profile: the processor's fp32 array on the
#: GPU plus its copy in the model dtype (`pixel_values.type(self.visual.dtype)` in qwen2_vl.py).
PIXEL_BYTES = 4 + 2
#: Activations of the vision blocks at their peak, in 16-bit copies of (width + MLP width) per patch:
#: the residual stream, the fused qkv and the rotary q/k (fp32 inside apply_rotary_pos_emb_vision),
#: the MLP's fc1 and activation. Fitted (bench/calibrate_vllm.py, step 4) on the four Qwen3-VL-30B
#: TP=2 start-up logs of tests/data/engine_records.yaml (vLLM 0.11-0.12, 64 and 256 sequences: the
#: log leaves 2.65-2.69 GiB beyond gpusize's other terms).
VISION_ACTIVATION_COPIES = 2.80
#: From this release the encoder's peak and the decoder's are apart (module docstring). Observed on
#: the vLLM 0.19.0 Qwen3.5-27B TP=4 logs of tests/data/engine_records.yaml: with one sequence the
#: log leaves 0.87 GiB of torch peak, the encoder's, where the decoder needs 0.02; with 256 the
#: same server leaves what the decoder and sampler need (0.91 GiB modelled), not their sum with the
#: encoder's. The 0.11-0.12 Qwen3-VL logs show the encoder's term on top of the decoder's at both 64
#: and 256 sequences (VISION_ACTIVATION_COPIES), though profile_run (vllm/v1/worker/
#: gpu_model_runner.py) runs the same steps in 0.12.0 and 0.19.0: releases between are modelled as
#: before (the larger, so the safer). The per-rank peak (`encoder_peak_bytes`) takes the blocks'
#: VISION_ACTIVATION_COPIES as fitted on 0.11-0.12, no new fit: on the one-sequence log it gives 0.95
#: GiB per GPU where the log leaves 0.87 (the safe side; KV +1.3%, was +13.4%).
ENCODER_APART_SINCE = parse_version("0.19.0")
#: Bytes per pixel-value element in the per-rank peak (ENCODER_APART_SINCE on): the processor's
#: outputs are cast to the model dtype (vllm/multimodal/processing/context.py _postprocess_output,
#: "emulates output.to(dtype=self.model_config.dtype)"), so the `.type(self.visual.dtype)` in
#: qwen3_vl.py _process_image_input copies nothing.
PROCESSED_PIXEL_BYTES = 2
#: From this release vLLM builds no vision tower, so loads none of its weights, when
#: --limit-mm-per-prompt gives 0 items of every tower modality: vllm-project/vllm#22299 ("Implicit
#: language-model-only mode via limit-mm-per-prompt", merged 2025-08-06, first in 0.10.1), made general
#: by #32605 (SupportsMultiModal._mark_tower_model: "Tower model components are automatically skipped
#: when `--limit-mm-per-prompt` is set to zero for all of their modalities"); --language-model-only
#: (#34120) sets every limit to 0. Assumed for every tower gpusize parses from 0.10.1. Public log:
#: vllm-gb10-dj-qwen36-35b-bf16 (0.19.2, Qwen3.6-35B-A3B text-only) loads 64.69 GiB, the BF16
#: checkpoint less its 418,904,944-parameter tower (65.47 - 0.78 GiB).
TOWER_SKIPPED_SINCE = parse_version("0.10.1")


def mm_limits(raw: str | None) -> dict[str, int] | None:
    """The items per prompt per modality from `--limit-mm-per-prompt` as vLLM reads it: JSON
    ('{"image":0,"video":0}'; a modality may be an object with "count", as from 0.11) or the older
    'image=0,video=0'. None when not given (vLLM's default: the model's own limits)."""
    if raw is None:
        return None
    text = raw.strip()
    try:
        pairs = json.loads(text) if text.startswith("{") else dict(_pair(p) for p in text.split(","))
    except ValueError:
        pairs = None
    if not isinstance(pairs, dict):
        raise _bad(raw)
    return {str(k): _count(raw, v) for k, v in pairs.items()}


def _pair(item: str) -> tuple[str, int]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ValueError(item)
    return key.strip(), int(value)


def _count(raw: str, value: object) -> int:
    if isinstance(value, dict):
        value = value.get("count", 1)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1 << 16:
        raise _bad(raw)
    return value


def _bad(raw: str) -> InputError:
    shown = raw.encode("unicode_escape").decode("ascii")[:80]
    return InputError(
        f"--limit-mm-per-prompt: expected '{{\"image\":N,\"video\":N}}' or 'image=N,video=N' with "
        f"counts 0 to 65536, got '{shown}'"
    )


def max_item_tokens(v: VisionSpec, max_pixels: int) -> int:
    """Tokens of the largest item (vLLM get_image_size_with_most_features): smart_resize of an
    unbounded square to at most `max_pixels`, in multiples of factor = patch x merge, then
    (side / factor)^2 tokens. Qwen2-VL: floor(3584 / 28)^2 = 16,384."""
    factor = v.patch_size * v.spatial_merge_size
    side = math.floor(math.sqrt(max_pixels) / factor)
    return side * side


class EncoderBudget(NamedTuple):  # a NamedTuple for start-up (core/settings.Setting)
    """vLLM compute_encoder_budget (vllm/v1/core/encoder_cache_manager.py): budget =
    max(max_num_batched_tokens, tokens of the largest item); items = what the profile runs."""

    tokens_per_item: int
    budget: int
    items: int
    modality: str = "image"


def encoder_budget(
    tokens_per_item: int,
    batched_tokens: int,
    max_seqs: int,
    limit: int,
    modality: str = "image",
    context: int | None = None,
) -> EncoderBudget:
    """The encoder budget and the items vLLM profiles (MultiModalBudget._get_max_items, vllm/v1/
    worker/utils.py in 0.12, vllm/multimodal/encoder_budget.py in 0.19): budget // tokens per item,
    at most max_num_seqs x the items per prompt, which are the limit capped by what the context holds
    (max(1, min(limit, max_model_len // tokens per item))); at least one."""
    budget = max(batched_tokens, tokens_per_item)
    per_prompt = limit if context is None else max(1, min(limit, context // tokens_per_item))
    items = max(min(budget // tokens_per_item, max_seqs * per_prompt), 1)
    return EncoderBudget(tokens_per_item, budget, items, modality)


def encoder_profile_bytes(
    v: VisionSpec, text_hidden: int, eb: EncoderBudget, copies: float = VISION_ACTIVATION_COPIES
) -> int:
    """The encoder profile peak on one GPU for `eb.items` items of the largest size: patches P =
    items x tokens x merge^2; pixel values P x (channels x t x patch^2) x PIXEL_BYTES; the blocks
    `copies` x P x (width + MLP width) x 2 B (the tower runs whole on every rank);
    the encoder cache: items x tokens x output width x (1 + deepstack) x 2 B."""
    patches = eb.items * eb.tokens_per_item * v.spatial_merge_size**2
    pixels = patches * v.num_channels * v.temporal_patch_size * v.patch_size**2 * PIXEL_BYTES
    blocks = copies * patches * (v.hidden_size + v.intermediate_size) * 2
    out = v.out_hidden_size or text_hidden
    cache = eb.items * eb.tokens_per_item * out * (1 + v.deepstack_layers) * 2
    return int(pixels + blocks + cache)


def encoder_peak_bytes(
    v: VisionSpec, eb: EncoderBudget, tp: int, copies: float = VISION_ACTIVATION_COPIES, ranks: int = 1
) -> int:
    """The encoder's own peak on one GPU (ENCODER_APART_SINCE on) for `eb.items` items of the largest
    size: patches P = items x tokens x merge^2; the pixel values in the model dtype, P x (channels x
    t x patch^2) x PROCESSED_PIXEL_BYTES (held through the run); the blocks' `copies` of P x (width +
    MLP width / tp) x 2 B: vLLM's Qwen3_VisionTransformer splits qkv, proj, fc1 and fc2 across the
    tensor-parallel ranks (QKVParallelLinear / ColumnParallelLinear / RowParallelLinear, disable_tp
    only with mm_encoder_tp_mode "data"), while the residual stream between them is whole on each
    rank; the deepstack features the blocks keep for the end: items x tokens x output width x
    deepstack x 2 B. `ranks` > 1: --mm-encoder-tp-mode data over that many ranks (tp is then 1):
    every rank holds all the pixel values and runs ceil(items / ranks) of the items on the whole
    tower (vision.py run_dp_sharded_mrope_vision_model)."""
    per_patch = v.num_channels * v.temporal_patch_size * v.patch_size**2 * PROCESSED_PIXEL_BYTES
    pixels = eb.items * eb.tokens_per_item * v.spatial_merge_size**2 * per_patch
    here = -(-eb.items // ranks)
    patches = here * eb.tokens_per_item * v.spatial_merge_size**2
    blocks = copies * patches * (v.hidden_size + v.intermediate_size / tp) * 2
    deepstack = here * eb.tokens_per_item * v.out_hidden_size * v.deepstack_layers * 2
    return int(pixels + blocks + deepstack)


def encoder_data_parallel(spec: ModelSpec, work: Workload, tp: int) -> bool:
    """--mm-encoder-tp-mode data in effect: asked, over more than one rank, for a tower that takes it."""
    v = spec.vision
    data = work.engine.mm_encoder_tp_mode == "data"
    return data and tp > 1 and v is not None and v.model_type in DATA_PARALLEL_TOWERS


def vision_replica(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """With --mm-encoder-tp-mode data each rank loads the whole vision tower (its linear layers built
    with disable_tp): what that adds to the 1/tp share the weights hold (None otherwise, and
    text-only, where the tower is not built)."""
    if not encoder_data_parallel(spec, work, tp) or text_only(work):
        return None
    fmt = work.weights
    extra = spec.params.vision * fmt.other_bytes * fmt.checkpoint_scale * (1 - 1 / tp)
    return Reserve(
        "vision_replica", int(extra), "the vision tower whole on every rank (mm-encoder-tp-mode data)"
    )


def text_only(work: Workload) -> bool:
    """0 items of every modality (or --language-model-only): vLLM serves the checkpoint text-only
    and skips the encoder profile."""
    if work.engine.language_model_only:
        return True
    limits = mm_limits(work.engine.limit_mm_per_prompt)
    return limits is not None and not any(limits.get(m, 1) for m in MODALITIES)


def skipped_tower_bytes(spec: ModelSpec, work: Workload, tp: int) -> int:
    """The vision tower's weights on one GPU that vLLM does not load when serving text-only (0 from
    before TOWER_SKIPPED_SINCE, for a text model, or with any tower modality left)."""
    since = TOWER_SKIPPED_SINCE
    if spec.vision is None or not text_only(work) or since is None or work.release.version < since:
        return 0
    fmt = work.weights
    return int(spec.params.vision * fmt.other_bytes / tp * fmt.checkpoint_scale)


def video_item_tokens(frame_tokens: int, context: int, images: int, videos: int) -> int:
    """Tokens of the largest dummy video (qwen2_vl.py get_num_frames_with_most_features): pairs of
    frames at the largest size (`frame_tokens` each, temporal_patch_size 2) filling what the
    context leaves after the images, shared by the videos; at least one pair. No frame cap (vLLM
    caps the frames per video; the larger is the safer)."""
    room = max(context - frame_tokens * images, 0)
    return frame_tokens * max(room // frame_tokens // max(videos, 1), 1)


def profiled_budget(spec: ModelSpec, gpu: GpuSpec, work: Workload) -> EncoderBudget | None:
    """The encoder budget and items vLLM profiles for a Qwen-VL tower (None: another tower, none,
    or text-only): the modality with the most tokens per item (the image on a tie, as vLLM's
    max() over the modalities in order). A modality the flag leaves out keeps vLLM's default
    limit (DEFAULT_LIMIT). The largest video: TWO_FRAME_VIDEO_SINCE for the Qwen3-VL family's
    processor, else `video_item_tokens`."""
    v = spec.vision
    if v is None or v.model_type not in SIZED_TOWERS or text_only(work):
        return None
    sched = scheduler_limits(gpu, work, behaviour_of(work, spec))
    given = mm_limits(work.engine.limit_mm_per_prompt) or {}
    images, videos = (given.get(m, DEFAULT_LIMIT) for m in MODALITIES)
    image = max_item_tokens(v, MAX_PIXELS[v.model_type])
    video = video_item_tokens(image, work.context_tokens, images, videos) if videos else 0
    two_frames = TWO_FRAME_VIDEO_SINCE is not None and work.release.version >= TWO_FRAME_VIDEO_SINCE
    if videos and two_frames and v.model_type in VIDEO_MAX_PIXELS:
        video = max_item_tokens(v, VIDEO_MAX_PIXELS[v.model_type] // v.temporal_patch_size)
    tokens, limit, kind = (image, images, "image") if images and image >= video else (video, videos, "video")
    return encoder_budget(
        tokens, sched.max_num_batched_tokens, sched.max_num_seqs, limit, kind, work.context_tokens
    )


def encoder_profile(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """The encoder profile reserve (None for a text model, or text-only). Towers without processor
    numbers keep the encoder cache alone: max_num_batched_tokens x text hidden x 2 B."""
    v = spec.vision
    if v is None or text_only(work):
        return None
    eb = profiled_budget(spec, gpu, work)
    if eb is None:
        sched = scheduler_limits(gpu, work, behaviour_of(work, spec))
        held = sched.max_num_batched_tokens * spec.hidden_size * 2
        return Reserve("encoder_profile", held, "estimate: encoder cache of the profile run", True)
    kind = "Qwen2-VL" if v.model_type in QWEN2_VL_TOWERS else "Qwen3-VL"
    kind = "Qwen3.5" if v.model_type in QWEN3_5_TOWERS else kind
    items = f"{eb.items} {eb.modality} x {eb.tokens_per_item:,} tokens"
    how = f"estimate: {kind} encoder on {items} (budget {eb.budget:,})"
    since = ENCODER_APART_SINCE
    if since is None or work.release.version < since:
        return Reserve("encoder_profile", encoder_profile_bytes(v, spec.hidden_size, eb), how, True)
    data = encoder_data_parallel(spec, work, tp)
    peak = encoder_peak_bytes(v, eb, 1, ranks=tp) if data else encoder_peak_bytes(v, eb, tp)
    beh = behaviour_of(work, spec)
    limits = scheduler_limits(gpu, work, beh, spec)
    ep = work.engine.enable_expert_parallel and spec.moe is not None
    fused = work.weights.name != "mxfp4"
    decoder = activation_bytes(spec, limits, tp, fused, beh, ep, work.engine.flashinfer_sampler)
    above = f", {peak / GIB:.2f} GiB per GPU, less the decoder's peak ({decoder / GIB:.2f} GiB)"
    return Reserve("encoder_profile", max(peak - decoder, 0), how + above, True)
