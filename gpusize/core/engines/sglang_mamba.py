"""SGLang's state pool for recurrent hybrids (Mamba-2, Gated DeltaNet, Kimi Delta Attention layers):
`HybridReqToTokenPool` / `MambaPool` (python/sglang/srt/mem_cache/memory_pool.py), sized at start-up
by `handle_max_mamba_cache` (model_runner.py; kv_cache_configurator.py in later releases) before the
KV pool, from the memory the static budget leaves after the weights (pure).

- One state slot per request (and per cached radix-tree prefix): every recurrent layer's conv window
  and recurrent state on this GPU (`Mamba2CacheParams.mamba_cache_per_req` = (conv elements x conv
  itemsize + temporal elements x temporal itemsize) x layers; the shapes are vLLM's, TP-split the
  same way: `core.kinds.*.state_bytes`; worked examples per family: tests/core/test_sglang_families.py).
- Dtypes (python/sglang/srt/configs/mamba_utils.py `mamba2_state_dtype`): the conv state bfloat16
  (SGLANG_MAMBA_CONV_DTYPE, default bfloat16), the recurrent state float32 unless the config's
  `mamba_ssm_dtype` (or SGLANG_MAMBA_SSM_DTYPE / --mamba-ssm-dtype) says otherwise; Kimi Delta
  Attention's in float32 unless --mamba-ssm-dtype says otherwise (SGLang reads no config for it).
- Slots, by default (radix cache on, --max-mamba-cache-size unset): the rest of the static budget is
  split so that mamba state : full KV = mamba_full_memory_ratio (default 0.9), i.e. the state pool
  takes 0.9 / 1.9 of it, `max_mamba_cache_size = floor(that / mamba_cache_per_req)`; the KV pool gets
  what is left (SGLang's own unit test: `costs.solve(74 GiB x 0.9 / 1.9, ...)`).

SGLang's own documentation of these defaults: sgl-project/sglang PR #15337 (docs/basic_usage/qwen3.md,
merged 2025-12-17): "`--mamba-ssm-dtype`: ... The default setting is `float32`", "`--mamba-full-memory-
ratio`: The ratio of mamba state memory to full kv cache memory. The default is 0.9". Read from code
excerpts of these files held by the code-search index, not at a release tag (the sglang snapshot is
larger than the fetch limit).

--max-mamba-cache-size sets the slots, --mamba-ssm-dtype the recurrent state's dtype. Not modelled
yet: --mamba-full-memory-ratio, --disable-radix-cache (slots = max_running_requests instead),
MambaRadixCacheV2's two extra ping-pong slots per request, and speculative decoding's state per draft
token; the default above is what a plain launch allocates.
"""

from __future__ import annotations

from gpusize.core.kinds import kimi_delta, mixer_kind
from gpusize.core.reserves import Reserve
from gpusize.core.spec import LayerSpec, ModelSpec
from gpusize.core.workload import Workload
from gpusize.units import DTYPE_BYTES, GIB

__all__ = [
    "MAMBA_CONV_BYTES",
    "MAMBA_FULL_MEMORY_RATIO",
    "MAMBA_SSM_DEFAULT",
    "mamba_cache_per_req",
    "sglang_mamba_pool",
    "ssm_dtype",
]

#: server_args.py `mamba_full_memory_ratio: float = 0.9`: the state pool's bytes over the KV pool's.
MAMBA_FULL_MEMORY_RATIO = 0.9
#: mamba_utils.py: the conv state in bfloat16 (SGLANG_MAMBA_CONV_DTYPE unset).
MAMBA_CONV_BYTES = 2
#: mamba_utils.py `mamba2_state_dtype`: "Default float32" for the recurrent (temporal) state.
MAMBA_SSM_DEFAULT = "fp32"


#: --mamba-ssm-dtype values as gpusize dtype names.
_SSM_FLAG = {"float32": "fp32", "bfloat16": "bf16"}


def ssm_dtype(spec: ModelSpec, work: Workload | None = None) -> str:
    """--mamba-ssm-dtype, else the config's mamba_ssm_dtype, else float32 (mamba_utils.py)."""
    flag = work.engine.mamba_ssm_dtype if work is not None else None
    return _SSM_FLAG[flag] if flag else spec.ssm_state_dtype or MAMBA_SSM_DEFAULT


def mamba_cache_per_req(spec: ModelSpec, tp: int, work: Workload | None = None) -> int:
    """Bytes of one request's state slot on one GPU of a `tp`-way split: every recurrent layer."""
    ssm = DTYPE_BYTES[ssm_dtype(spec, work)]
    return sum(
        _kda_bytes(spec, layer, tp, work)
        if mixer_kind(spec, layer) is kimi_delta.KIND
        else mixer_kind(spec, layer).state_bytes(spec, layer, tp, MAMBA_CONV_BYTES, ssm)
        for layer in spec.layers
        if mixer_kind(spec, layer).state_elements(spec, layer) > 0
    )


def _kda_bytes(spec: ModelSpec, layer: LayerSpec, tp: int, work: Workload | None) -> int:
    """A Kimi Delta Attention layer's slot: SGLang builds KimiLinearCacheParams without the config
    (configs/kimi_linear.py), so its recurrent state takes SGLANG_MAMBA_SSM_DTYPE, which
    --mamba-ssm-dtype sets (arg_groups/serving_hook.py in 0.5.23, server_args.py in 0.5.10 and
    0.5.14), else float32; the kind keeps vLLM's float32 (`kimi_delta.RECURRENT_BYTES`)."""
    flag = work.engine.mamba_ssm_dtype if work is not None else None
    ssm = DTYPE_BYTES[_SSM_FLAG[flag] if flag else MAMBA_SSM_DEFAULT]
    kind = mixer_kind(spec, layer)
    recurrent = kind.state_bytes(spec, layer, tp, 0, ssm)  # the kind's float32 recurrent state
    conv = kind.state_bytes(spec, layer, tp, MAMBA_CONV_BYTES, ssm) - recurrent
    return conv + int(recurrent // kimi_delta.RECURRENT_BYTES * ssm)


def sglang_mamba_pool(
    spec: ModelSpec, tp: int, rest_bytes: int, work: Workload | None = None
) -> tuple[Reserve, ...]:
    """The state pool SGLang allocates before the KV pool out of `rest_bytes` (the static budget
    after the weights and the other reserves), or nothing for a model without recurrent layers:
    --max-mamba-cache-size slots when given, else the mamba_full_memory_ratio share."""
    per_req = mamba_cache_per_req(spec, tp, work)
    if per_req <= 0 or rest_bytes <= 0:
        return ()
    given = work.engine.max_mamba_cache_size if work is not None else None
    if given:
        slots, why = given, "--max-mamba-cache-size"
    else:
        share = rest_bytes * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)
        slots = int(share // per_req)
        why = (
            f"{MAMBA_FULL_MEMORY_RATIO} / {1 + MAMBA_FULL_MEMORY_RATIO:g} of the static budget left "
            "after the weights (mamba_full_memory_ratio)"
        )
    return (
        Reserve(
            "mamba_pool",
            slots * per_req,
            f"SGLang's state pool: {slots:,} slots (max_mamba_cache_size) of {per_req / GIB * 1024:.1f} "
            f"MiB, {why}; conv state bf16, recurrent state {ssm_dtype(spec, work)}",
        ),
    )
