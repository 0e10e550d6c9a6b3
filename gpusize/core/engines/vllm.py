"""vLLM's memory model (pure), release by release from 0.10.0 to 0.33.0.

Per GPU, the budget (gpu_memory_utilization x CUDA-visible total) must hold weights + activation peak
+ non-torch memory (+ the CUDA-graph estimate from 0.20.0) + the KV blocks the requests need; the CUDA
context and whatever else the release keeps outside the budget must fit in the rest of the device.
The KV pool is what the budget leaves after the non-KV terms
(vllm/v1/worker/gpu_worker.py determine_available_memory). What changes between releases is read
from each release's source (`Behaviour`, with the release ranges in `behaviour`); the few constants
no source fixes are fitted to public start-up logs by bench/calibrate_vllm.py, and those logs stay
as conformance tests (tests/core/test_conformance.py, tests/core/test_vllm_releases.py).
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass, replace

from gpusize.core import kvcache, runtime
from gpusize.core.engines.base import EngineModel
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate, PerGpu, refused, split_problem, yarn_flag
from gpusize.core.releases import VLLM, Version, parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import rope_cache_bytes, weights_bytes
from gpusize.core.workload import Workload
from gpusize.units import GIB

__all__ = [
    "CAPTURE_SIZES",
    "CUDA_GRAPH_PER_CAPTURE",
    "CUDA_GRAPH_PER_CAPTURE_LAYER",
    "ENGINE",
    "FLASHINFER_SAMPLER_COPIES",
    "HIDDEN_STATE_COPIES",
    "NCCL_INIT_TPN",
    "NON_TORCH_PP",
    "NON_TORCH_TP1",
    "NON_TORCH_TPN",
    "NON_TORCH_TPN_0_11",
    "SAMPLER_LOGITS_COPIES",
    "SORT_SAMPLER_EXTRA_COPIES",
    "THIN_MARGIN",
    "Behaviour",
    "SchedulerLimits",
    "activation_bytes",
    "behaviour",
    "context_refusal",
    "capture_sizes",
    "cuda_graph_estimate_bytes",
    "evaluate",
    "evaluate_nodes",
    "evaluate_pipeline",
    "headroom_warning",
    "thin_margin_warning",
    "nvls",
    "non_torch_bytes",
    "scheduler_limits",
    "scheduler_note",
    "utilization",
]

#: `vllm serve` scheduler defaults (engine/arg_utils.py get_batch_defaults; NVML total memory and name):
#: >= 70 GiB and not an A100: 8192 batched tokens / 1024 sequences; >= 160 GiB from 0.28.0: 16384 / 1024;
#: otherwise 2048 / 256.
LARGE_GPU_BYTES = 70 * GIB
HUGE_GPU_BYTES = 160 * GIB

#: Profile-run peak (vLLM's 'torch peak increase') from 0.17.0, when top-k/top-p run as Triton kernels:
#: SAMPLER_LOGITS_COPIES fp32 copies of the dummy sampler's logits (min(max_num_seqs,
#: max_num_batched_tokens) rows x vocab, all-gathered on every rank) + HIDDEN_STATE_COPIES bf16 copies
#: of the dummy batch's hidden states (max_num_batched_tokens x hidden). Least-squares fit over the 16
#: non-PP vLLM 0.19 H100 records of tests/data/reference/engine-logs.yaml (bench/calibrate_vllm.py).
SAMPLER_LOGITS_COPIES = 3.76
HIDDEN_STATE_COPIES = 0.90
#: Before 0.17.0 top-k/top-p sorted the whole [rows, vocab] logits in PyTorch (fp32 values, int64
#: indices, a softmax and cumsum on the sorted copy, an out-of-place scatter): extra fp32 copies of the
#: sampler logits held at the peak. Fitted by bench/calibrate_vllm.py on the 0.10-0.16 start-up logs of
#: tests/data/engine_records.yaml (weights, available KV and GPU total logged; non-torch as below).
SORT_SAMPLER_EXTRA_COPIES = 5.0
#: With the FlashInfer sampler (the default up to 0.11.0 where FlashInfer is installed, opt-in after):
#: fp32 copies of the sampler logits at the peak, in place of the PyTorch or Triton path's. Fitted by
#: bench/calibrate_vllm.py on the 0.10.1 logs of a vllm-openai image deployment (FlashInfer inside).
FLASHINFER_SAMPLER_COPIES = 2.1

#: Memory outside PyTorch that grows during the profile run (vLLM 'non-torch forward increase'):
#: 0.24-0.27 GiB at TP=1 (mean 0.25; vLLM 0.19 H100 records llmd-v019-*), the same at TP>=2 over PCIe
#: (0.23 GiB on 2x T4 at 0.22).
NON_TORCH_TP1 = int(0.25 * GIB)
#: At TP>=2 on an NVSwitch Hopper/Blackwell server (NVLink SHARP and symmetric-memory all-reduce
#: buffers): 2.07-2.17 GiB per GPU in the 0.19 H100 logs (mean 2.10). The 0.11-0.16 logs show far
#: less (0.39 GiB at TP=2 on H100 in 0.12, zzsf records); 0.17-0.18 have no TP>=2 record and are
#: modelled as 0.19 (the larger, so the safer for a verdict).
NON_TORCH_TPN = int(2.10 * GIB)
NON_TORCH_TPN_0_11 = int(0.39 * GIB)
#: Pipeline-parallel non-torch increase per GPU (llmd-v019-04: 0.07 GiB at PP=2).
NON_TORCH_PP = int(0.07 * GIB)
#: Up to 0.10.2 the start-up snapshot came before distributed init, so what distributed init allocates
#: counted inside the budget: on an NVSwitch Hopper server NCCL's NVLink SHARP buffers, fitted by
#: bench/calibrate_vllm.py on the 0.10.0 TP=8 H100 logs; elsewhere the small NCCL share
#: (runtime.NCCL_PEER_TPN; 0.10.1 TP=2 A100 logs leave 0.12-0.14 GiB for it).
NCCL_INIT_TPN = int(2.36 * GIB)
#: CUDA-graph estimate (vLLM's "CUDA graph pool memory: ... (estimated)", subtracted from the budget
#: from 0.20): the estimator measures the first captures and extrapolates per graph, so it grows with
#: the number of capture sizes (1, 2, 4, then every 8 up to 256, every 16 up to 512, up to
#: max_num_seqs; the 0.18 max_num_seqs sweep scales that way) and, per graph, with the decoder layers
#: whose buffers the graph pool holds. Least-squares fit (bench/calibrate_vllm.py) over the estimates the
#: 0.19 logs print: bytes per capture = CUDA_GRAPH_PER_CAPTURE + CUDA_GRAPH_PER_CAPTURE_LAYER x layers
#: (+ CUDA_GRAPH_PER_CAPTURE_TPN at TP>=2). Mean error 0.16 GiB: the estimate is itself noisy.
CUDA_GRAPH_PER_CAPTURE = int(0.0078 * GIB)
CUDA_GRAPH_PER_CAPTURE_LAYER = int(0.00026 * GIB)
CUDA_GRAPH_PER_CAPTURE_TPN = int(0.0045 * GIB)
#: The largest CUDA-graph pool seen in the 0.19 H100 logs (1.84 GiB): what a release that captures
#: graphs outside the budget must find free there.
CUDA_GRAPH_POOL = int(1.84 * GIB)


@dataclass(frozen=True)
class Behaviour:
    """How one vLLM release sizes memory (each field: the releases where it holds, from the source)."""

    version: Version
    #: CacheConfig default: 0.9 up to 0.19.1, 0.92 from 0.20.0.
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


def _at_least(version: Version, text: str) -> bool:
    floor = parse_version(text)
    assert floor is not None
    return version >= floor


def behaviour(version: Version, spec: ModelSpec | None = None) -> Behaviour:
    dense = spec is not None and spec.moe is None and spec.linear_attention is None and spec.mamba is None
    return _behaviour(version, dense)


@functools.lru_cache(maxsize=128)
def _behaviour(v: Version, dense: bool) -> Behaviour:
    """The release's behaviour for a dense non-hybrid model (`dense`) or any other; cached, as every
    evaluation asks for it."""
    v2_runner_without_estimate = dense and _at_least(v, "0.25.0") and not _at_least(v, "0.29.0")
    return Behaviour(
        version=v,
        default_utilization=0.92 if _at_least(v, "0.20.0") else 0.9,
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
    )


@dataclass(frozen=True)
class SchedulerLimits:
    max_num_seqs: int
    max_num_batched_tokens: int


def scheduler_limits(gpu: GpuSpec, work: Workload, beh: Behaviour | None = None) -> SchedulerLimits:
    """The scheduler limits vLLM runs with: the user's, else the release's per-device defaults, clamped
    as the release clamps defaulted values (engine/arg_utils.py)."""
    beh = beh or behaviour(work.release.version)
    large = gpu.reported_bytes >= LARGE_GPU_BYTES and "a100" not in gpu.full_name.lower()
    seqs, tokens = (1024, 8192) if large else (256, 2048)
    if beh.huge_tier and gpu.reported_bytes >= HUGE_GPU_BYTES:
        seqs, tokens = 1024, 16384
    given_seqs, given_tokens = work.engine.max_num_seqs, work.engine.max_num_batched_tokens
    seqs, tokens = given_seqs or seqs, given_tokens or tokens
    if beh.clamp_tokens_to_len and given_tokens is None:
        tokens = min(seqs * work.context_tokens, tokens)
    if beh.clamp_seqs_to_tokens and given_seqs is None:
        seqs = min(seqs, tokens)
    return SchedulerLimits(seqs, tokens)


def scheduler_note(gpu: GpuSpec, work: Workload) -> str | None:
    """Why fewer sequences per step frees memory on this GPU: on a card with vLLM's larger scheduler
    defaults (>= 70 GiB and not an A100) the sampler's logits and the CUDA graphs are sized for 1024
    sequences, where an A100 80GB gets 256; None when the GPU already has the small defaults or the
    user set the limits."""
    beh = behaviour(work.release.version)
    if work.engine.max_num_seqs is not None:
        return None
    limits = scheduler_limits(gpu, work, beh)
    if limits.max_num_seqs <= 256:
        return None
    return (
        f"vLLM's scheduler defaults on this card are {limits.max_num_seqs} sequences / "
        f"{limits.max_num_batched_tokens:,} batched tokens per step (cards of 70 GiB and more, A100 "
        "excepted; A100 and smaller cards get 256 / 2,048): the sampler and CUDA graphs reserved for "
        "them take the room the KV cache needs"
    )


def utilization(work: Workload) -> float:
    return work.engine.gpu_memory_utilization or behaviour(work.release.version).default_utilization


def activation_bytes(
    spec: ModelSpec,
    limits: SchedulerLimits,
    tp: int = 1,
    fused_moe: bool = True,
    beh: Behaviour | None = None,
    expert_parallel: bool = False,
    flashinfer_sampler: bool = False,
) -> int:
    """Estimate of the activation peak on one GPU (vLLM's 'torch peak increase').

    sampler: copies x rows x vocab x 4 B (logits cast to fp32, top-k/top-p over them; before 0.17 the
    sort path holds SORT_SAMPLER_EXTRA_COPIES more); hidden: copies x tokens x hidden x 2 B; fused MoE
    workspace (vLLM fused_moe caches): tokens x top_k x (3 x expert width / tp + hidden) x 2 B (with
    expert parallelism a rank runs 1/tp of the routed tokens at full width); multimodal encoder cache:
    tokens x hidden x 2 B held during the profile (gpu_model_runner.profile_run)."""
    tokens = limits.max_num_batched_tokens
    rows = min(limits.max_num_seqs, tokens)
    if flashinfer_sampler and beh and beh.sort_sampler:
        copies = FLASHINFER_SAMPLER_COPIES
    else:
        copies = SAMPLER_LOGITS_COPIES + (SORT_SAMPLER_EXTRA_COPIES if beh and beh.sort_sampler else 0)
    sampler = copies * rows * spec.vocab_size * 4
    hidden = HIDDEN_STATE_COPIES * tokens * spec.hidden_size * 2
    moe = 0.0
    if spec.moe and fused_moe:
        m = spec.moe
        width = m.moe_intermediate_size / tp
        moe = tokens * m.num_experts_per_tok * (3 * width + spec.hidden_size) * 2
        if expert_parallel:  # 1/tp of the routed tokens at full width: the same product
            moe = tokens * m.num_experts_per_tok / tp * (3 * m.moe_intermediate_size + spec.hidden_size) * 2
    encoder = tokens * spec.hidden_size * 2 if spec.vision else 0
    return int(sampler + hidden + moe + encoder)


#: vLLM's default CUDA-graph capture sizes (vllm/config/compilation.py), ascending.
CAPTURE_SIZES = (1, 2, 4, *range(8, 257, 8), *range(272, 513, 16))


def capture_sizes(max_num_seqs: int) -> int:
    """How many batch sizes vLLM captures as CUDA graphs: 1, 2, 4, every 8 up to 256, every 16 up to
    512 (vllm/config/compilation.py default capture sizes), those <= min(max_num_seqs, 512)."""
    return bisect.bisect_right(CAPTURE_SIZES, min(max_num_seqs, 512))


def cuda_graph_estimate_bytes(spec: ModelSpec, limits: SchedulerLimits, tp: int) -> int:
    """The release's CUDA-graph memory estimate (see CUDA_GRAPH_PER_CAPTURE)."""
    per = CUDA_GRAPH_PER_CAPTURE + CUDA_GRAPH_PER_CAPTURE_LAYER * spec.num_hidden_layers
    per += CUDA_GRAPH_PER_CAPTURE_TPN if tp > 1 else 0
    return per * capture_sizes(limits.max_num_seqs)


def nvls(gpu: GpuSpec) -> bool:
    """An NVSwitch Hopper/Blackwell server, where NCCL and vLLM set up NVLink SHARP buffers."""
    return gpu.interconnect == "nvswitch" and gpu.architecture.startswith(("Hopper", "Blackwell"))


def non_torch_bytes(gpu: GpuSpec, tp: int, beh: Behaviour) -> int:
    """Non-torch memory inside the budget: the profile's increase, plus (0.10.x) distributed init."""
    if tp == 1:
        return NON_TORCH_TP1
    if not nvls(gpu):
        return NON_TORCH_TP1 + (runtime.NCCL_PEER_TPN if beh.nccl_init_in_budget else 0)
    if beh.nccl_init_in_budget:
        return NON_TORCH_TPN_0_11 + NCCL_INIT_TPN
    return NON_TORCH_TPN if beh.nvls_in_profile else NON_TORCH_TPN_0_11


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
            f"quality on short texts), or --max-model-len {limit}"
        )
    else:
        advice = f"or --max-model-len {limit}; a RoPE model extends with --rope-scaling yarn:FACTOR"
    return (
        f"vLLM {beh.version} refuses to start: User-specified max_model_len ({context}) is greater than "
        f"the derived max_model_len (max_position_embeddings={limit} in model's config.json). To allow "
        "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (positions beyond it "
        f"lead to NaN with RoPE); {advice}"
    )


def evaluate(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Candidate:
    """Fit test of one model on `tp` GPUs of one type."""
    beh = behaviour(work.release.version, spec)
    ep = work.engine.enable_expert_parallel and spec.moe is not None
    block = spec.quantization.block_size if (spec.quantization and work.uses_checkpoint_blocks) else None
    problem = split_problem(spec, tp, block, ep)
    if problem:
        return refused(gpu, tp, problem)
    limits = scheduler_limits(gpu, work, beh)
    weights = weights_bytes(spec, work.weights, tp, work.include_mtp, ep)
    acts = activation_bytes(
        spec, limits, tp, work.weights.name != "mxfp4", beh, ep, work.engine.flashinfer_sampler
    )
    graphs = 0 if work.engine.enforce_eager else cuda_graph_estimate_bytes(spec, limits, tp)
    overhead = non_torch_bytes(gpu, tp, beh) + (graphs if beh.graphs_in_budget else 0)
    visible = gpu.visible_bytes
    usable = int(utilization(work) * visible)
    outside = runtime.cuda_context_bytes(tp, gpu.interconnect) + (
        0 if beh.graphs_in_budget or not graphs else CUDA_GRAPH_POOL
    )
    state = kvcache.recurrent_state_bytes(spec, work.kv_bytes, tp) * work.batch
    available = usable - weights - acts - overhead - state
    layout = kvcache.kv_layout(spec, work.kv_bytes, tp, beh.hybrid_group_ratio)
    kv_need, capacity, concurrency, max_ctx = 0, None, None, None
    if layout is not None:
        kv_need, capacity, concurrency, max_ctx = _pool(spec, layout, max(available, 0), work, limits, beh)
    total = weights + kv_need + acts + overhead + state
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=kv_need + state,
        activations_bytes=acts,
        overhead_bytes=overhead,
        total_bytes=total,
        usable_bytes=usable,
        headroom_bytes=usable - total,
        outside_budget_bytes=outside,
        outside_budget_limit_bytes=visible - usable - work.reserved_bytes,
        visible_bytes=visible,
    )
    reason = (
        _misfit(per_gpu, available, work, max_ctx)
        or _not_free(gpu, usable, work.reserved_bytes, tp, beh)
        or _no_context_room(per_gpu)
    )
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=tp,
        tensor_parallel=tp,
        fits=reason is None,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=capacity,
        max_concurrency=concurrency,
        max_context_tokens=max_ctx,
        kv_heads_per_gpu=kvcache.kv_heads_per_gpu(spec.num_key_value_heads, tp),
        kv_heads_replicated=not spec.mla and tp > spec.num_key_value_heads,
        warning=headroom_warning(per_gpu) or thin_margin_warning(per_gpu, available),
        usd_per_hour=gpu.price_for(tp),
    )


def _pool(
    spec: ModelSpec,
    layout: kvcache.KvLayout,
    available: int,
    work: Workload,
    limits: SchedulerLimits,
    beh: Behaviour,
) -> tuple[int, int, float, int]:
    """(KV bytes the requests need, pool tokens as the release logs them, concurrency, largest context)."""
    batched = limits.max_num_batched_tokens
    need = work.batch * kvcache.request_kv_bytes(layout, work.context_tokens, batched)
    blocks = kvcache.pool_blocks(layout, available)
    per_request = kvcache.blocks_per_request(layout, work.context_tokens, batched)
    limit = max(work.context_tokens, spec.max_context or spec.max_position_embeddings or 0)
    largest = kvcache.largest_context(layout, blocks, work.batch, batched, limit)
    concurrency = blocks / per_request
    if beh.tokens_from_concurrency:
        tokens = int(concurrency * work.context_tokens)
    else:
        tokens = kvcache.capacity_tokens(layout, blocks)
    return need, tokens, round(concurrency, 2), largest


def _misfit(g: PerGpu, available: int, work: Workload, max_ctx: int | None) -> str | None:
    if available <= 0:
        return (
            f"weights, activations and overhead ({(g.usable_bytes - available) / GIB:.1f} GiB) "
            f"exceed the {g.usable_bytes / GIB:.1f} GiB budget; no room for KV cache"
        )
    if g.total_bytes > g.usable_bytes:
        fits_ctx = f"; the largest context that fits is {max_ctx:,} tokens" if max_ctx else ""
        return (
            f"KV cache for {work.batch} x {work.context_tokens:,} tokens needs "
            f"{g.kv_cache_bytes / GIB:.1f} GiB, only {available / GIB:.1f} GiB left{fits_ctx}"
        )
    return None


def _no_context_room(g: PerGpu) -> str | None:
    """The budget leaves less than a CUDA context outside it (utilization set too high)."""
    if g.outside_budget_limit_bytes < runtime.CUDA_CONTEXT_TP1:
        return (
            f"only {g.outside_budget_limit_bytes / GIB:.2f} GiB left outside the utilization "
            f"budget, less than a CUDA context ({runtime.CUDA_CONTEXT_TP1 / GIB:.2f} GiB); "
            f"lower --gpu-memory-utilization"
        )
    return None


def _not_free(gpu: GpuSpec, usable: int, reserved: int, tp: int, beh: Behaviour) -> str | None:
    """vLLM refuses to start when the free memory at its start-up snapshot is below utilization x total
    ("Free memory on device ... is less than desired GPU memory utilization"). The snapshot comes after
    the CUDA context, and from 0.11 after NCCL init, so those are already taken from the free memory."""
    taken = (
        runtime.CUDA_CONTEXT_TP1
        if beh.nccl_init_in_budget
        else runtime.cuda_context_bytes(tp, gpu.interconnect)
    )
    base = gpu.visible_bytes if gpu.free_mib is None else gpu.free_mib * (1 << 20)
    free = base - reserved - taken
    if free >= usable:
        return None
    return (
        f"vLLM refuses to start: free memory on startup ({free / GIB:.2f} GiB) is less than the "
        f"utilization budget ({usable / GIB:.2f} GiB); lower --gpu-memory-utilization or free memory"
    )


#: A pool within this fraction of what the requests need is inside the model's error on public logs
#: (tests/core/test_vllm_releases.py holds every record to 3%): the verdict stands, with a warning.
THIN_MARGIN = 0.03


def thin_margin_warning(g: PerGpu, available: int) -> str | None:
    """Warn when the KV pool exceeds what the requests need by less than the model's error."""
    need = g.kv_cache_bytes
    if need <= 0 or available < need or available >= need * (1 + THIN_MARGIN):
        return None
    return (
        f"fits by {(available - need) / GIB:.2f} GiB of KV cache, within gpusize's {THIN_MARGIN:.0%} error "
        "on public start-up logs: the next size up is the safe choice, or lower --max-num-seqs"
    )


def headroom_warning(g: PerGpu) -> str | None:
    """The CUDA context (and, where the release keeps it outside, the graph pool) live outside the
    budget; warn when our conservative estimate of them exceeds what is left there. Not a verdict: vLLM
    runs TP=2 on 24 GB cards at 0.9 and 0.98 (engine-logs vllm-13061), where this estimate says it would
    not."""
    if g.outside_budget_bytes <= g.outside_budget_limit_bytes:
        return None
    return (
        f"CUDA context + graph pool may need ~{g.outside_budget_bytes / GIB:.1f} GiB outside "
        f"the budget, {g.outside_budget_limit_bytes / GIB:.1f} GiB left (a cautious estimate from "
        "public vLLM start-up logs): if start-up fails at CUDA-graph capture, lower "
        "--gpu-memory-utilization or use --enforce-eager"
    )


# --------------------------------------------------------------------------- pipeline parallel


def evaluate_pipeline(
    spec: ModelSpec, gpu: GpuSpec, tp: int, pp: int, work: Workload, servers: int = 1
) -> Candidate:
    """TP x PP: each of `pp` pipeline stages holds 1/pp of the layers (weights and KV) on `tp` GPUs;
    the last stage keeps the sampler's activation peak, and vLLM sizes the pool by the fullest stage
    (llmd-v019-04: Llama-3.1-8B at PP=2 logs 1,075,312 tokens). An ESTIMATE beyond that record."""
    single = evaluate(spec, gpu, tp, work)
    if single.per_gpu is None:
        return replace(single, num_gpus=tp * pp, pipeline_parallel=pp, usd_per_hour=gpu.price_for(tp * pp))
    beh = behaviour(work.release.version, spec)
    g = single.per_gpu
    rope = rope_cache_bytes(spec, work.weights)
    weights = (g.weights_bytes - rope) // pp + rope
    graphs = g.overhead_bytes - non_torch_bytes(gpu, tp, beh)
    overhead = (non_torch_bytes(gpu, tp, beh) if tp > 1 else 0) + NON_TORCH_PP + graphs
    available = g.usable_bytes - weights - g.activations_bytes - overhead
    layers = len(spec.attention_layers)
    per_token = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, tp) * -(-layers // pp) // max(layers, 1)
    capacity = max(available, 0) // per_token // kvcache.BLOCK_SIZE * kvcache.BLOCK_SIZE if per_token else 0
    need = work.batch * work.context_tokens * per_token
    total = weights + need + g.activations_bytes + overhead
    per_gpu = replace(
        g,
        weights_bytes=weights,
        kv_cache_bytes=need,
        overhead_bytes=overhead,
        total_bytes=total,
        headroom_bytes=g.usable_bytes - total,
    )
    fits = available > 0 and capacity >= work.batch * work.context_tokens
    largest = min(capacity // max(work.batch, 1), spec.max_context or capacity)
    largest = largest // kvcache.BLOCK_SIZE * kvcache.BLOCK_SIZE
    reason = None
    if not fits:
        reason = f"TP={tp} x PP={pp}: {available / GIB:.1f} GiB left for KV per GPU, {capacity:,} tokens"
    warning = None
    if servers > 1:
        warning = (
            f"spans {servers} servers (TP={tp} x PP={pp}): the inter-node network (InfiniBand/RoCE) "
            f"decides speed, and memory of remote GPUs does not add up for free. Estimate."
        )
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=tp * pp,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        fits=fits,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=capacity,
        max_concurrency=round(capacity / work.context_tokens, 2),
        max_context_tokens=largest,
        kv_heads_per_gpu=kvcache.kv_heads_per_gpu(spec.num_key_value_heads, tp),
        warning=warning,
        usd_per_hour=gpu.price_for(tp * pp),
    )


def evaluate_nodes(spec: ModelSpec, gpu: GpuSpec, nodes: int, work: Workload) -> Candidate:
    """Multi-node ESTIMATE: TP=8 inside each server, one pipeline stage per server (vLLM's layout for
    models beyond one node); only used when the user asks (`--nodes`)."""
    return evaluate_pipeline(spec, gpu, 8, nodes, work, servers=nodes)


def effective_settings(
    spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload
) -> dict[str, float | int | str]:
    beh = behaviour(work.release.version, spec)
    limits = scheduler_limits(gpu, work, beh)
    graphs = (
        "off (--enforce-eager)"
        if work.engine.enforce_eager
        else ("inside the budget" if beh.graphs_in_budget else "outside the budget")
    )
    out: dict[str, float | int | str] = {
        "gpu_memory_utilization": utilization(work),
        "max_num_seqs": limits.max_num_seqs,
        "max_num_batched_tokens": limits.max_num_batched_tokens,
        "block_size": kvcache.MLA_BLOCK_SIZE if spec.mla else kvcache.BLOCK_SIZE,
        "cuda_graphs": graphs,
    }
    if work.engine.enable_expert_parallel:
        out["enable_expert_parallel"] = "on"
    if work.engine.flashinfer_sampler:
        out["sampler"] = "FlashInfer"
    return out


def model_notes(spec: ModelSpec, work: Workload) -> tuple[str, ...]:
    """What vLLM's allocator does with this model that the answer depends on."""
    if any(layer.window for layer in spec.attention_layers):
        return (
            "sliding-window layers reserve min(window - 1 + max_num_batched_tokens, context) tokens per "
            "request, as vLLM's hybrid KV allocator does",
        )
    return ()


ENGINE = EngineModel(
    name="vllm",
    version=f"vLLM {VLLM.newest}",
    note="vLLM: gpu_memory_utilization x CUDA-visible total holds weights + activation peak + non-torch "
    "memory (+ the CUDA-graph estimate from 0.20) + paged KV (16-token blocks, hybrid groups); the CUDA "
    "context outside it",
    evaluate=evaluate,
    effective_settings=effective_settings,
    releases=VLLM,
    refuses_context=lambda spec, work: context_refusal(
        spec, work.context_tokens, behaviour(work.release.version)
    ),
    budget=lambda spec, gpu, tp, work: utilization(work),
    max_sequences=lambda gpu, work: scheduler_limits(gpu, work).max_num_seqs,
    pages_kv=True,
    serves=True,
    quantizes_on_load=True,
    nodes=lambda spec, gpu, nodes, work: evaluate_nodes(spec, gpu, nodes, work),
    notes=model_notes,
)
