"""What changes between vLLM releases, read from each release's source (`Behaviour`), and what
follows from it alone: the default utilization, the engine (V0 or V1) a release runs, and the refusals
of a context above the config's and of a V0 engine or bitsandbytes weights the release no longer has.

The V0 engine (vllm/worker/, VLLM_USE_V1=0) is the default up to 0.7.3 (vllm/envs.py: VLLM_USE_V1
defaults to "0"), V1 from 0.8.0 (default "1"); V0 stays selectable up to 0.10.2 and is gone in 0.11.0
(vllm/worker/worker.py removed). Read from the 0.7.0-0.9.2, 0.10.2 and 0.11.0 wheels on PyPI."""

from __future__ import annotations

import functools

from gpusize.core.engines.vllm.extensible import extensible
from gpusize.core.plan import yarn_caveat, yarn_flag
from gpusize.core.releases import VLLM, Version, parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass, replace

__all__ = [
    "LAST_V0",
    "V1_DEFAULT_SINCE",
    "Behaviour",
    "behaviour",
    "behaviour_of",
    "context_refusal",
    "engine_refusal",
    "quantization_refusal",
    "utilization",
]

#: VLLM_USE_V1 defaults to "1" from 0.8.0 (vllm/envs.py; "0" up to 0.7.3).
V1_DEFAULT_SINCE = "0.8.0"
#: The first release without the V0 engine (0.11.0 has no vllm/worker/worker.py), and the last with it.
V0_REMOVED_IN = "0.11.0"
LAST_V0 = str(VLLM.last_before(V0_REMOVED_IN))
#: The first release without bitsandbytes and the last with it: the 0.28.0 wheel on PyPI holds neither
#: model_executor/layers/quantization/bitsandbytes.py nor model_loader/bitsandbytes_loader.py, and its
#: QuantizationMethods no longer lists "bitsandbytes" (all three in the 0.27.1 wheel; read with
#: bench/release_sources.py).
BITSANDBYTES_UNTIL = "0.28.0"
LAST_BITSANDBYTES = str(VLLM.last_before(BITSANDBYTES_UNTIL))


@dataclass(frozen=True)
class Behaviour:
    """How one vLLM release sizes memory (each field: the releases where it holds, from the source)."""

    version: Version
    #: CacheConfig default: 0.9 up to 0.19.1, 0.92 from 0.20.0, 1.0 with the extensible KV cache.
    default_utilization: float
    #: PyTorch-sort top-k/top-p in the profile run (before 0.17.0).
    sort_sampler: bool
    #: Distributed-init memory inside the budget (the snapshot came first, 0.10.x).
    nccl_init_in_budget: bool
    #: NVSwitch all-reduce buffers grow during the profile run (0.19 logs; 0.17 on, assumed).
    nvls_in_profile: bool
    #: The CUDA-graph estimate is subtracted from the budget (0.20.0 on, V1 runner; Model Runner V2,
    #: the default for dense non-hybrid models in 0.25.0-0.28.0, returned 0 until 0.29.0).
    graphs_in_budget: bool
    #: Hybrid KV groups take the largest type's layer count when it is < this x the smallest
    #: (0.12.0: 1.25; 0.18.0: 1.5; up to 0.11.2 always the smallest: 1.0).
    hybrid_group_ratio: float
    #: "GPU KV cache size" = int(concurrency x max_model_len) from 0.20.1 (num_blocks // groups x block
    #: before).
    tokens_from_concurrency: bool
    #: YaRN / dynamic rope scaling raises the derived max_model_len (up to 0.29.0).
    rope_extends_max_len: bool
    #: >= 160 GiB devices get 16384 batched tokens by default (0.28.0 on).
    huge_tier: bool
    #: Defaulted limits are clamped: max_num_batched_tokens <= max_num_seqs x max_model_len (0.12.0 on)
    #: and max_num_seqs <= max_num_batched_tokens (0.10.1 on).
    clamp_tokens_to_len: bool
    clamp_seqs_to_tokens: bool
    #: The engine: V1 (vllm/v1/worker/gpu_worker.py) or V0 (vllm/worker/worker.py
    #: determine_num_available_blocks: the same memory_profiling rule as 0.10 V1, CUDA graphs captured
    #: after the KV cache, outside the budget; 256 sequences; only the driver rank samples).
    v1: bool = True
    #: V1 up to 0.9.0.1 takes what the device holds outside PyTorch's allocations after the profile run
    #: (total - free - torch allocated: the CUDA context, NCCL, cuBLAS workspaces) from the budget;
    #: memory_profiling (the increase since the start-up snapshot) from 0.9.1, and in V0 throughout.
    context_in_budget: bool = False
    #: Refuses to start when the free memory at start-up is below utilization x total (V1 from 0.9.1:
    #: gpu_worker.py init_device "... is less than desired GPU memory utilization"). V1 before it counts
    #: other processes' memory inside the budget (a smaller pool, no refusal); V0 sizes the pool for
    #: the budget and runs out of memory allocating it.
    checks_free_memory: bool = True
    #: V1 0.7.x: the profile run computes 16-bit logits for every dummy token and no sampler
    #: (gpu_model_runner.py profile_run: "TODO(woosuk): Consider the memory usage of the sampler").
    logits_every_token: bool = False
    #: The hybrid KV allocator (one group per layer type, sliding layers keep their window): V1 from
    #: 0.9.1 (kv_cache_utils.py _get_kv_cache_config_uniform_page_size). Before it, and in V0, a model
    #: mixing sliding and full layers keeps every layer full (unify_hybrid_kv_cache_specs: "Hybrid KV
    #: cache manager is disabled for this hybrid model").
    hybrid_kv: bool = True
    #: V1 scheduler defaults (engine/arg_utils.py): "h100" 8192 tokens on a device whose name holds
    #: H100/H200, else 2048 (0.7.0-0.8.4; 1024 sequences everywhere up to 0.8.3, 1024/256 in 0.8.4);
    #: "memory" >= 70 GiB (0.8.5); "memory-not-a100" >= 70 GiB and not an A100 (0.9.0 on).
    batch_tier: str = "memory-not-a100"
    seqs_1024_everywhere: bool = False
    #: The extensible KV cache (0.34.0 on, V1; `extensible.py`): the pool is what the device leaves
    #: after warmup less a margin and the transient peak (activations + graph estimate), at a default
    #: utilization of 1.0.
    extensible_kv: bool = False
    #: CacheConfig.DEFAULT_BLOCK_SIZE: 16 tokens up to 0.33.0, 64 from 0.34.0 (vllm/config/cache.py).
    default_block_size: int = 16


def _at_least(version: Version, text: str) -> bool:
    floor = parse_version(text)
    assert floor is not None
    return version >= floor


def behaviour(version: Version, spec: ModelSpec | None = None, v1: bool | None = None) -> Behaviour:
    """The release's behaviour; `v1` the engine asked for (None: the release's default)."""
    dense = spec is not None and spec.moe is None and spec.linear_attention is None and spec.mamba is None
    return _behaviour(version, dense, _at_least(version, V1_DEFAULT_SINCE) if v1 is None else v1)


def behaviour_of(work: Workload, spec: ModelSpec | None = None) -> Behaviour:
    """The behaviour of the release and engine (VLLM_USE_V1) the workload names, with the extensible KV
    cache turned off where the settings say so (--no-enable-extensible-kv-cache: the estimate-based
    sizing, at its 0.92 default utilization)."""
    found = behaviour(work.release.version, spec, work.engine.vllm_use_v1)
    if found.extensible_kv and work.engine.enable_extensible_kv_cache is False:
        return _without_extensible(found)
    return found


@functools.lru_cache(maxsize=16)
def _without_extensible(beh: Behaviour) -> Behaviour:
    return replace(beh, extensible_kv=False, default_utilization=ESTIMATE_BASED_UTILIZATION)


#: CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION (0.34.0): the default without the extensible KV cache.
ESTIMATE_BASED_UTILIZATION = 0.92


@functools.lru_cache(maxsize=128)
def _behaviour(v: Version, dense: bool, v1: bool = True) -> Behaviour:
    """The release's behaviour for a dense non-hybrid model (`dense`) or any other; cached, as every
    evaluation asks for it."""
    v2_runner_without_estimate = dense and _at_least(v, "0.25.0") and not _at_least(v, "0.29.0")
    sized_after_warmup = v1 and extensible(v)
    return Behaviour(
        version=v,
        # CacheConfig.resolved_gpu_memory_utilization: 1.0 with the extensible KV cache (0.34.0 on)
        default_utilization=1.0 if sized_after_warmup else 0.92 if _at_least(v, "0.20.0") else 0.9,
        sort_sampler=not _at_least(v, "0.17.0"),
        nccl_init_in_budget=not _at_least(v, "0.11.0"),
        nvls_in_profile=_at_least(v, "0.17.0"),
        graphs_in_budget=_at_least(v, "0.20.0") and not v2_runner_without_estimate,
        hybrid_group_ratio=1.5 if _at_least(v, "0.18.0") else 1.25 if _at_least(v, "0.12.0") else 1.0,
        tokens_from_concurrency=_at_least(v, "0.20.1"),
        rope_extends_max_len=not _at_least(v, "0.30.0"),
        huge_tier=_at_least(v, "0.28.0"),
        clamp_tokens_to_len=_at_least(v, "0.12.0"),
        clamp_seqs_to_tokens=_at_least(v, "0.10.1"),
        v1=v1,
        context_in_budget=v1 and not _at_least(v, "0.9.1"),
        checks_free_memory=v1 and _at_least(v, "0.9.1"),
        logits_every_token=v1 and not _at_least(v, "0.8.0"),
        hybrid_kv=v1 and _at_least(v, "0.9.1"),
        batch_tier="memory-not-a100"
        if _at_least(v, "0.9.0")
        else "memory"
        if _at_least(v, "0.8.5")
        else "h100",
        seqs_1024_everywhere=not _at_least(v, "0.8.4"),
        extensible_kv=sized_after_warmup,
        default_block_size=64 if _at_least(v, "0.34.0") else 16,
    )


def utilization(work: Workload) -> float:
    return work.engine.gpu_memory_utilization or behaviour_of(work).default_utilization


def engine_refusal(work: Workload) -> str | None:
    """VLLM_USE_V1=0 on a release without the V0 engine; None otherwise."""
    if work.engine.vllm_use_v1 is not False or not _at_least(work.release.version, V0_REMOVED_IN):
        return None
    return (
        f"vLLM {work.release.version} has no V0 engine (VLLM_USE_V1=0): it was removed in {V0_REMOVED_IN}; "
        f"pass --engine-version {LAST_V0} or earlier, or leave --vllm-use-v1 at its default"
    )


def quantization_refusal(spec: ModelSpec, work: Workload) -> str | None:
    """bitsandbytes weights (quantized while loading, or a bitsandbytes checkpoint) on a release without
    bitsandbytes; None otherwise."""
    stored = spec.quantization is not None and spec.quantization.method == "bitsandbytes"
    wanted = stored or work.load_quantization == "bitsandbytes"
    if not wanted or not _at_least(work.release.version, BITSANDBYTES_UNTIL):
        return None
    return (
        f"vLLM {work.release.version} does not load bitsandbytes weights (removed in {BITSANDBYTES_UNTIL}); "
        f"pass --engine-version {LAST_BITSANDBYTES} or earlier, or serve a GPTQ/AWQ checkpoint"
    )


def context_refusal(spec: ModelSpec, context: int, beh: Behaviour) -> str | None:
    """vLLM's refusal to start when max_model_len is above what the config allows (config/model.py
    _get_and_verify_max_len), with the override it names; None when the context is allowed."""
    base = spec.max_position_embeddings
    # A --rope-scaling given to gpusize travels in the launch command with max_position_embeddings raised
    # (--hf-overrides), so every release accepts it; a YaRN in the config raises the limit up to 0.29.
    limit = spec.max_context if beh.rope_extends_max_len or spec.rope_overridden else base
    if not limit or context <= limit:
        return None
    yarn = yarn_flag(spec, context)
    if spec.rope_scaling and not beh.rope_extends_max_len:
        advice = "0.30+ no longer raises it for the config's YaRN: pass --rope-scaling to carry it"
    elif yarn:
        advice = (
            f"or extend it with YaRN where the model card allows it: {yarn} (static YaRN may lower "
            f"quality on short texts){yarn_caveat(spec, context)}; or --max-model-len {limit}"
        )
    else:
        advice = f"or --max-model-len {limit}; a RoPE model extends with --rope-scaling yarn:FACTOR"
    return (
        f"vLLM {beh.version} refuses to start: User-specified max_model_len ({context}) is greater than "
        f"the derived max_model_len (max_position_embeddings={limit} in model's config.json). To allow "
        "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (positions beyond it "
        f"lead to NaN with RoPE); {advice}"
    )
