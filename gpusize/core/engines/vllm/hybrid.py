"""vLLM's hybrid KV-cache manager for models with recurrent layers (Gated DeltaNet, Mamba-2, Kimi
Delta Attention) beside attention layers, as vLLM 0.19.0 allocates it.

Every recurrent layer keeps its state in one page of the same KV pool as the attention layers
(vllm/v1/kv_cache_interface.py `MambaSpec`, one block per running request):

1. mamba page = the state of one recurrent layer on one GPU: its conv window in the model dtype
   (`--mamba-cache-dtype auto`) + its recurrent state in the SSM dtype
   (vllm/model_executor/layers/mamba/mamba_utils.py `MambaStateShapeCalculator`,
   `MambaStateDtypeCalculator`);
2. the attention block size is raised to the smallest multiple of the kernel alignment (16 tokens;
   64 for MLA; 128 for MLA from 0.27.0, `MLA_HYBRID_ALIGNMENT`) whose attention page holds a mamba
   page, and the mamba page is padded up to that attention page (vllm/model_executor/models/
   config.py `HybridAttentionMambaModelConfig.verify_and_update_config`; in the 0.27.0-0.33.0
   wheels vllm/platforms/interface.py `Platform._align_hybrid_block_size`), `mamba_cache_mode`
   "none": prefix caching is off by default for hybrid models up to 0.27.1 (engine/arg_utils.py
   `default_prefix_caching = ... and not model_config.is_hybrid`; on from 0.28.0, "align" mode:
   `state_blocks`);
3. the layers are grouped by type with the group-size rule of vllm/v1/core/kv_cache_utils.py
   `_get_kv_cache_groups_uniform_page_size` (the state layers are one more type), the pool holds
   available // (page x group_size) blocks, a request takes cdiv(context, block) blocks in each
   attention group and one block in each state group (`MambaSpec.max_memory_usage_bytes`; two or
   three from 0.28.0, `state_blocks`), and
   the logged "GPU KV cache size" is num_blocks // num_groups x block_size.

The SSM dtype with `--mamba-ssm-cache-dtype auto`: the config's `mamba_ssm_dtype` for Qwen3.5
(`Qwen3_5ForConditionalGenerationConfig`), the config's `mamba_ssm_cache_dtype` or float16 for
Nemotron-H (`NemotronHForCausalLMConfig`), the conv dtype otherwise; Kimi Delta Attention keeps its
recurrent state in fp32 under `auto` (`kda_state_dtype`; from 0.30.0 an explicit float32 or bfloat16
chooses it, a flag gpusize does not offer).
"""

from __future__ import annotations

import functools

from gpusize.core.gpu import GpuSpec
from gpusize.core.kinds import mixer_kind
from gpusize.core.kvcache import GROUP_SIZE_RATIO, KvGroup, KvLayout, group_size, groups_of
from gpusize.core.releases import Version, parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import activation_dtype
from gpusize.core.workload import Workload
from gpusize.units import DTYPE_BYTES

__all__ = [
    "MLA_HYBRID_ALIGNMENT",
    "MLA_HYBRID_ALIGNMENT_SINCE",
    "STATE_GROUP",
    "block_alignment",
    "state_blocks",
    "holds_state",
    "mamba_page_bytes",
    "ssm_dtype",
    "state_dtypes",
    "with_state_pages",
]

#: The group kind of recurrent-state layers in a KvLayout: one block per request.
STATE_GROUP = "state"
#: Nemotron-H's SSM state dtype when the config names none (NemotronHForCausalLMConfig).
NEMOTRON_SSM_DEFAULT = "fp16"
#: The block alignment of a hybrid whose attention is MLA (Kimi-Linear, Kimi-K3), read in the 0.27.0
#: wheel (vllm/platforms/interface.py `Platform._align_hybrid_block_size`: "TRTLLM/FlashInfer MLA
#: decode kernels require the physical number of kernel blocks to be aligned to 128 /
#: kernel_block_size ... make the manager block size a multiple of 128",
#: `kernel_block_alignment_size = max(kernel_block_alignment_size, 128)`); the same line in every
#: wheel from 0.27.0 to 0.33.0, absent from 0.26.0 and earlier (bench/release_sources.py grep).
MLA_HYBRID_ALIGNMENT = 128
#: The first release with `MLA_HYBRID_ALIGNMENT`.
MLA_HYBRID_ALIGNMENT_SINCE = "0.27.0"
#: From the 0.28.0 wheel vLLM turns prefix caching on for hybrid models (engine/arg_utils.py
#: `default_prefix_caching = model_config.is_prefix_caching_supported`; 0.27.1 adds "and not
#: model_config.is_hybrid": "Hybrid models support prefix caching but keep it opt-in for now"), and
#: with it `mamba_cache_mode = "align"` (model_executor/models/config.py `MambaModelConfig`), where
#: a request holds ALIGN_STATE_BLOCKS state blocks per state group (v1/kv_cache_interface.py
#: `MambaSpec.max_memory_usage_bytes`: `page_size_bytes * (2 + self.num_speculative_blocks)`; 1 +
#: num_speculative_blocks without prefix caching). gpusize offers no --no-enable-prefix-caching.
ALIGN_MODE_SINCE = "0.28.0"
ALIGN_STATE_BLOCKS = 2
#: From the 0.29.0 wheel Kimi-K3's KDA layers add `num_prefill_checkpoint_blocks` =
#: int(kda_prefill_backend == "flashkda") to that (vllm/models/kimi_k3/nvidia/kda.py
#: `KimiK3DeltaAttention.get_kv_cache_spec`; 0.31.0-0.33.0: `int(alignment is not None)`,
#: `kda_prefill_checkpoint_alignment` 16 for flashkda): one more block per request where the "auto"
#: prefill backend is FlashKDA (`is_flashkda_supported`: CUDA compute capability major 9, 10 or 12,
#: head_dim 128, bf16 activations, a gate_lower_bound, which the released config sets).
KDA_CHECKPOINT_SINCE = "0.29.0"
#: `is_flashkda_supported`: `capability.major in (9, 10, 12)` (0.29.0-0.33.0 wheels).
FLASHKDA_CAPABILITY_MAJORS = ("9", "10", "12")
#: `is_flashkda_supported`: `head_dim == 128`.
FLASHKDA_HEAD_DIM = 128


def ssm_dtype(spec: ModelSpec, conv_dtype: str) -> str:
    """The recurrent-state dtype vLLM 0.19 uses under `--mamba-ssm-cache-dtype auto`."""
    if spec.family in ("qwen3_5_text", "qwen3_5_moe_text") and spec.ssm_state_dtype:
        return spec.ssm_state_dtype
    if spec.family == "nemotron_h":
        return spec.ssm_state_dtype or NEMOTRON_SSM_DEFAULT
    return conv_dtype


def state_dtypes(spec: ModelSpec, work: Workload) -> tuple[str, str]:
    """(conv dtype, SSM dtype): the conv window follows the model dtype (`--dtype`), not the KV dtype."""
    conv = (
        work.requested_dtype if work.requested_dtype in ("fp32", "bf16", "fp16") else activation_dtype(spec)
    )
    return conv, ssm_dtype(spec, conv)


#: Cached (four small keys, an int): every vLLM evaluation and block size reads it, for every model
#: (0 for one without recurrent layers), on every row of a batch (bench/RESULTS.md).
@functools.lru_cache(maxsize=256)
def mamba_page_bytes(spec: ModelSpec, tp: int, conv_dtype: str, ssm: str) -> int:
    """Bytes of one recurrent layer's state on one GPU (the unpadded mamba page); 0 without one.

    vLLM builds one MambaSpec per layer and requires one page size: every recurrent layer of the
    model has the same shape, so the largest is that page."""
    conv_bytes, ssm_bytes = DTYPE_BYTES[conv_dtype], DTYPE_BYTES[ssm]
    return max(
        (
            mixer_kind(spec, layer).state_bytes(spec, layer, tp, conv_bytes, ssm_bytes)
            for layer, _ in spec.layer_counts  # each distinct layer once, hashed once per spec
        ),
        default=0,
    )


def with_state_pages(
    spec: ModelSpec,
    layout: KvLayout | None,
    work: Workload,
    tp: int,
    group_ratio: float = GROUP_SIZE_RATIO,
    gpu: GpuSpec | None = None,
) -> KvLayout | None:
    """The attention layout with the recurrent layers' pages added (steps 2 and 3 above); the layout
    unchanged for a model without recurrent layers or without attention layers. `gpu` picks Kimi-K3's
    KDA prefill backend (`state_blocks`); None for the block size alone."""
    conv, ssm = state_dtypes(spec, work)
    page = mamba_page_bytes(spec, tp, conv, ssm)
    if layout is None or not page:
        return layout
    per_token = layout.page_bytes // layout.block_size
    align = block_alignment(spec, layout.block_size, work)
    block = max(layout.block_size, align * -(-page // (align * per_token)))
    counts = dict(spec.attention_kinds)
    counts[(STATE_GROUP, None)] = sum(
        n for layer, n in spec.layer_counts if mixer_kind(spec, layer).state_elements(spec, layer) > 0
    )
    size = group_size(counts.values(), group_ratio)
    held = state_blocks(spec, work, gpu)
    groups = tuple(
        KvGroup(kind, window, state_blocks=held if kind == STATE_GROUP else 1)
        for (kind, window), n in counts.items()
        for _ in range(groups_of(n, size))
    )
    return KvLayout(block * per_token, block, size, groups, layout.draft_page_bytes)


def state_blocks(spec: ModelSpec, work: Workload, gpu: GpuSpec | None) -> int:
    """Blocks one request holds in each state group: 1 up to 0.27.1, `ALIGN_STATE_BLOCKS` from
    `ALIGN_MODE_SINCE`, one more for Kimi-K3's FlashKDA prefill checkpoint from
    `KDA_CHECKPOINT_SINCE` (speculative decoding's num_speculative_blocks not counted)."""
    version = work.release.version
    if version < _version(ALIGN_MODE_SINCE):
        return 1
    kd = spec.kimi_delta
    flashkda = (
        kd is not None
        and kd.full_rank_gate  # KimiK3DeltaAttention (Kimi-Linear's KDA layer has no checkpoint)
        and kd.head_dim == FLASHKDA_HEAD_DIM
        and state_dtypes(spec, work)[0] == "bf16"
        and gpu is not None
        and (gpu.compute_capability or "").partition(".")[0] in FLASHKDA_CAPABILITY_MAJORS
        and version >= _version(KDA_CHECKPOINT_SINCE)
    )
    return ALIGN_STATE_BLOCKS + flashkda


def _version(text: str) -> Version:
    parsed = parse_version(text)
    assert parsed is not None
    return parsed


def block_alignment(spec: ModelSpec, block: int, work: Workload) -> int:
    """The multiple the hybrid block size is raised by: the kernel block (16 for FlashAttention, 64
    for the MLA backends), at least `MLA_HYBRID_ALIGNMENT` for MLA from `MLA_HYBRID_ALIGNMENT_SINCE`."""
    if spec.mla is not None and work.release.version >= _version(MLA_HYBRID_ALIGNMENT_SINCE):
        return max(block, MLA_HYBRID_ALIGNMENT)
    return block


def holds_state(layout: KvLayout | None) -> bool:
    """True when the pool's pages hold the recurrent state (so it is not counted a second time)."""
    return layout is not None and any(group.kind == STATE_GROUP for group in layout.groups)
