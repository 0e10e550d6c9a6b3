"""TensorRT-LLM's KV pool (pure): the profiling peak, the free fraction after it, whole blocks; the
GPUs it runs on and its TP/PP/EP and attention-DP layouts (see the package doc)."""

from __future__ import annotations

import math

from gpusize.core import kvcache, runtime
from gpusize.core.engines.trtllm.defaults import (
    MIN_COMPUTE_CAPABILITY,
    THIN_MARGIN,
    free_fraction,
    max_batch_size,
    max_num_tokens,
    tokens_per_block,
)
from gpusize.core.engines.trtllm.dp import adp_weight_extra_bytes, attention_groups
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate, PerGpu, refused, split_problem, thin_margin
from gpusize.core.reserves import Reserve
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import rope_cache_bytes, weights_bytes
from gpusize.core.workload import Workload
from gpusize.units import GIB

__all__ = [
    "ACTIVATION_HIDDEN_COPIES",
    "ACTIVATION_MLP_COPIES",
    "TRTLLM_RUNTIME_BYTES",
    "activation_bytes",
    "evaluate",
    "hardware_problem",
    "kv_pool_bytes",
    "parallel_problem",
    "pool_tokens",
    "recurrent_state",
]

#: Memory the PyTorch backend holds at the profiling peak beyond the weights, the activation estimate
#: below and the CUDA context: CUDA graphs of the default batch sizes, the attention and cuBLAS
#: workspaces, the sampler's and decoder's buffers for max_batch_size requests. Fitted on the public
#: TensorRT-LLM 1.2.1 logs of tests/data/trtllm_records.yaml (what each logged pool leaves for it:
#: Qwen3-0.6B on an H100 1.03 GiB; SmolLM2-135M on an RTX 4070 SUPER 1.06 GiB at fraction 0.9 and
#: 1.06 GiB at 0.25): the same within 0.03 GiB for a 135M and a 0.6B model, a 49k and a 152k
#: vocabulary, so a constant (their mean). Not measured at TP >= 2, for MoE or above 1B parameters:
#: an ESTIMATE there.
TRTLLM_RUNTIME_BYTES = int(1.05 * GIB)
#: Live bf16 tensors per token at the profiling pass's peak, an ASSUMPTION from the decoder layer's
#: shapes (not fitted: the logged models are too small for it to show): the fused gate/up output (2 x
#: intermediate / tp) and the activated product (1 x intermediate / tp) of the MLP ...
ACTIVATION_MLP_COPIES = 3
#: ... and the residual, the normalized input, the attention output and the QKV projection's share of
#: the hidden width.
ACTIVATION_HIDDEN_COPIES = 4


def activation_bytes(spec: ModelSpec, work: Workload, tp: int) -> int:
    """The profiling pass's activation peak on one GPU: max_num_tokens tokens through one decoder layer
    (ACTIVATION_MLP_COPIES x intermediate / tp + ACTIVATION_HIDDEN_COPIES x hidden, 2 B each; an MoE
    layer's routed tokens x top_k x (3 x expert width / tp + hidden)), plus fp32 logits for the last
    token of each dummy request (max_num_tokens split into requests of max_seq_len - 1 tokens)."""
    tokens = max_num_tokens(work)
    width: float = ACTIVATION_HIDDEN_COPIES * spec.hidden_size
    if spec.moe:
        m = spec.moe
        width += m.num_experts_per_tok * (3 * m.moe_intermediate_size / tp + spec.hidden_size)
    else:
        width += ACTIVATION_MLP_COPIES * spec.intermediate_size / tp
    requests = math.ceil(tokens / max(min(tokens, work.context_tokens - 1), 1))
    return int(tokens * width * 2 + requests * spec.vocab_size * 4)


def hardware_problem(gpu: GpuSpec) -> str | None:
    """Why TensorRT-LLM does not run on this GPU (an AMD card, or older than Ampere), or None."""
    if gpu.vendor != "NVIDIA":
        return f"TensorRT-LLM runs on NVIDIA GPUs only (CUDA); {gpu.full_name} is {gpu.vendor}"
    if gpu.compute_capability:
        major, _, minor = gpu.compute_capability.partition(".")
        if (int(major), int(minor or 0)) < MIN_COMPUTE_CAPABILITY:
            return (
                f"TensorRT-LLM supports Ampere (SM80) and newer GPUs; {gpu.full_name} is SM"
                f"{gpu.compute_capability.replace('.', '')} (use --engine vllm or llamacpp)"
            )
    return None


def parallel_problem(spec: ModelSpec, n: int, work: Workload) -> str | None:
    """Why n GPUs cannot be split as --pp_size / --ep_size ask (mapping.py: world = tp x pp; the MoE
    group tp = moe_tp x moe_ep), or None."""
    pp = work.engine.pp_size or 1
    if n % pp:
        return f"--pp_size {pp} does not divide {n} GPUs (TensorRT-LLM runs tp_size x pp_size GPUs)"
    if pp > len(spec.layers):
        return f"--pp_size {pp} exceeds the model's {len(spec.layers)} layers"
    tp = n // pp
    ep = work.engine.ep_size
    if ep is None:
        return split_problem(spec, tp, None)
    if not spec.moe:
        return "--ep_size applies to mixture-of-experts models; this model has no experts"
    if tp % ep:
        return f"--ep_size {ep} must divide tp_size {tp} (moe_tp_size = tp_size / ep_size)"
    if spec.moe.num_experts % ep:
        return f"--ep_size {ep} does not divide the model's {spec.moe.num_experts} experts"
    return split_problem(spec, tp, None, expert_parallel=ep == tp)


def recurrent_state(spec: ModelSpec, work: Workload, tp: int, pp: int) -> Reserve | None:
    """Mamba / linear-attention state of hybrid models (Nemotron-H, Qwen3-Next): MambaCacheManager
    allocates conv and SSM state for max_batch_size requests up front (mamba_cache_manager.py:
    torch.empty([layers, max_batch_size, ...]) in the model dtype, mamba_ssm_cache_dtype auto), during
    the profiling pass too, so it is part of the peak the KV fraction is taken after."""
    per_sequence = kvcache.recurrent_state_bytes(spec, work.weights.other_bytes, tp) // pp
    if not per_sequence:
        return None
    batch = max_batch_size(work)
    return Reserve(
        "recurrent_state",
        per_sequence * batch,
        f"conv + SSM state of the recurrent layers for --max_batch_size {batch} requests, allocated at "
        "start-up (MambaCacheManager)",
    )


def kv_pool_bytes(visible: int, peak: int, fraction: float) -> int:
    """_util.py _cal_max_memory: fraction x (device total - profiling peak), 0 when the peak fills it."""
    return max(int((visible - peak) * fraction), 0)


def pool_tokens(pool: int, cell: int, block: int) -> int:
    """Tokens the pool holds: pool // cell (max_tokens), rounded up to whole blocks by the C++ manager."""
    return -(-(pool // cell) // block) * block if cell else 0


def _weights(spec: ModelSpec, work: Workload, tp: int, pp: int) -> int:
    """Weight bytes on one GPU: 1/tp of the sharded weights, 1/pp of the layers (the rope table on
    every stage), plus what attention DP keeps whole."""
    rope = rope_cache_bytes(spec, work.weights)
    weights = (weights_bytes(spec, work.weights, tp, work.include_mtp) - rope) // pp + rope
    if attention_groups(work, tp) > 1:
        weights += adp_weight_extra_bytes(spec, work.weights, tp) // pp
    return weights


def evaluate(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> Candidate:
    problem = hardware_problem(gpu) or parallel_problem(spec, n, work)
    if problem:
        return refused(gpu, n, problem)
    pp = work.engine.pp_size or 1
    tp = n // pp
    groups = attention_groups(work, tp)  # GPUs with a KV pool of their own
    attn_tp = tp // groups
    weights = _weights(spec, work, tp, pp)
    layers = max(len(spec.attention_layers), 1)
    cell = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, attn_tp) * -(-layers // pp) // layers
    activations = activation_bytes(spec, work, tp)
    context = runtime.cuda_context_bytes(n, gpu.interconnect)
    state = recurrent_state(spec, work, attn_tp, pp)
    held = (state,) if state else ()
    inside = weights + activations + TRTLLM_RUNTIME_BYTES + (state.bytes if state else 0)
    fraction = free_fraction(work)
    pool = kv_pool_bytes(gpu.visible_bytes, inside + context + work.reserved_bytes, fraction)
    capacity = pool_tokens(pool, cell, tokens_per_block(work))  # one pool (one GPU's with attention DP)
    per_pool = -(-work.batch // groups)
    need = per_pool * work.context_tokens * cell
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=need,
        activations_bytes=activations,
        overhead_bytes=TRTLLM_RUNTIME_BYTES,
        total_bytes=inside + need,
        usable_bytes=inside + pool,
        headroom_bytes=pool - need,
        outside_budget_bytes=context,
        outside_budget_limit_bytes=gpu.visible_bytes - inside - pool,
        visible_bytes=gpu.visible_bytes,
        reserves=held,
    )
    fits, reason = _verdict(work, pool, capacity, fraction, groups)
    seqs = capacity * groups / work.context_tokens
    thin = fits and thin_margin(seqs, work.batch, THIN_MARGIN)
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=n,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        fits=fits,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=capacity * groups,  # the instance's: one pool per attention-DP GPU
        max_concurrency=round(seqs, 2),
        thin_margin=thin,
        warning=f"holds {seqs:.2f} sequences of this context for {work.batch}, within gpusize's "
        f"{THIN_MARGIN:.0%} error on public start-up logs: the next size up is the safe choice"
        if thin
        else None,
        max_context_tokens=min(capacity // max(per_pool, 1), spec.max_context or capacity),
        kv_heads_per_gpu=kvcache.kv_heads_per_gpu(spec.num_key_value_heads, attn_tp),
        usd_per_hour=gpu.price_for(n),
    )


def _verdict(
    work: Workload, pool: int, capacity: int, fraction: float, groups: int
) -> tuple[bool, str | None]:
    """Fits when each pool holds its requests at full context and the scheduler runs them at once
    (max_batch_size per GPU under attention DP)."""
    if pool <= 0:
        return False, (
            "TensorRT-LLM runs out of memory at start-up: the weights and the profiling pass leave "
            "nothing free for the KV cache"
        )
    batch = max_batch_size(work) * groups
    if work.batch > batch:
        return (
            False,
            f"--max_batch_size {batch // groups} runs at most {batch} requests at once, {work.batch} asked",
        )
    per_pool = -(-work.batch // groups)
    if capacity < per_pool * work.context_tokens:
        where = f" per GPU ({groups} attention-DP pools)" if groups > 1 else ""
        if capacity < work.context_tokens:
            what = f"it lowers max_seq_len to {capacity:,} ('Adjusted max_seq_len')"
        else:
            what = (
                f"{capacity // work.context_tokens} sequences of {work.context_tokens:,} tokens run at once"
            )
        return False, (
            f"TensorRT-LLM starts, but its KV pool holds {capacity:,} tokens{where} ({fraction} of the "
            f"memory free after its profiling pass): {what}, {work.batch} asked"
        )
    return True, None
