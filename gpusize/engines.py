"""Memory models of the other engines (pure): SGLang, llama.cpp and plain transformers.

vLLM (the default) lives in `plan.evaluate`. Each model here states the engine version it
follows and returns the same `plan.Candidate`, so reports and serving plans treat engines alike.

- SGLang 0.5.6 (python/sglang/srt): mem_fraction_static from `_handle_gpu_memory_settings`
  (512 MiB + 1.5 x chunked prefill + 2 x cuda-graph batch + tp/8 GiB, at least 10 GiB above 60 GiB
  cards); KV pool = free after weights - free before weights x (1 - mem_fraction_static)
  (`profile_max_num_token`), cell = layers x 2 x (kv_heads / tp) x head_dim x bytes (MLA: latent).
- llama.cpp (ggml-org/llama.cpp@0c1e57098): the input embedding stays on the CPU, layers are
  offloaded from the end with the output head counted as a layer; KV = n_ctx (padded to 256) x
  layers x (k + v widths) x type size, sliding-window layers min(n_ctx, window + n_ubatch);
  compute buffer: KQ scores (no flash attention) or logits of one micro-batch, whichever is larger.
- transformers (eager generate): weights + DynamicCache for the whole context + the prefill peak
  (logits of the prompt in fp32 + one layer's attention and MLP intermediates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusize import kvcache, memory, plan
from gpusize.catalog import GpuSpec
from gpusize.model import ModelSpec
from gpusize.params import ParamCounts

ENGINE_NOTES = {
    "vllm": "vLLM 0.19: utilization x CUDA-visible total holds weights + activation peak + non-torch "
    "memory + paged KV (16-token blocks, hybrid groups); CUDA context and graphs outside it",
    "sglang": "SGLang 0.5.6: KV pool = free memory after weights - free memory before weights x "
    "(1 - mem_fraction_static); default fraction from GPU size and TP",
    "llamacpp": "llama.cpp: layers offloaded from the end (output head first), input embedding on "
    "the CPU; KV padded to 256 cells; compute buffer of one 512-token micro-batch",
    "transformers": "transformers generate: weights + full DynamicCache + prefill peak (fp32 logits "
    "of the prompt and one layer's intermediates) + CUDA context",
}
MIB = 1 << 20
GIB = 1 << 30
ENGINE_VERSIONS = {
    "vllm": "vLLM 0.19.0",
    "sglang": "SGLang 0.5.6",
    "llamacpp": "llama.cpp 0c1e57098 (Nov 2025)",
    "transformers": "transformers 4.5x generate (eager, DynamicCache)",
}


# --------------------------------------------------------------------------- SGLang


@dataclass(frozen=True)
class SglangDefaults:
    chunked_prefill: int
    cuda_graph_max_bs: int
    mem_fraction_static: float


def sglang_defaults(gpu: GpuSpec, tp: int) -> SglangDefaults:
    """SGLang 0.5.6 server_args: capacity tiers by nvidia-smi total (MiB), then the reserve."""
    mib = gpu.memory_mib
    tiers = [
        (20, 2048, 8, 8),
        (35, 2048, 24, 80),
        (60, 4096, 32, 160),
        (90, 8192, 256, 512),
        (160, 8192, 256, 512),
    ]
    chunk, graph = 16384, 512
    for limit_gb, c, small, large in tiers:
        if mib < limit_gb * 1024:
            chunk, graph = c, (small if tp < 4 else large)
            break
    reserved = 512 + max(chunk, 2048) * 1.5 + graph * 2 + tp / 8 * 1024
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return SglangDefaults(chunk, graph, round((mib - reserved) / mib, 3))


def sglang_evaluate(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: GpuSpec,
    tp: int,
    work: plan.Workload,
    mem_fraction: float | None = None,
) -> plan.Candidate:
    problem = plan.split_problem(spec, tp, None) or plan.context_problem(spec, work.context)
    if problem:
        return plan.Candidate(gpu.name, tp, tp, False, problem)
    fraction = mem_fraction or sglang_defaults(gpu, tp).mem_fraction_static
    fmt = plan.weight_format_for(spec, counts, work)
    weights = memory.weights_bytes(spec, counts, fmt, tp, work.include_mtp)
    kv_bytes = plan.kv_element_bytes(spec, work.kv_dtype)
    cell = memory.kv_cache_bytes_per_token(spec, kv_bytes, tp)
    free_before = gpu.visible_bytes - memory.cuda_context_bytes(tp)
    pool = int(free_before * fraction - weights)
    capacity = max(pool, 0) // cell if cell else 0
    need = work.batch * work.context * cell
    budget = int(free_before * fraction)
    total = weights + need
    per_gpu = plan.PerGpu(
        weights,
        need,
        0,
        0,
        total,
        budget,
        budget - total,
        memory.cuda_context_bytes(tp),
        gpu.visible_bytes - budget,
        gpu.visible_bytes,
    )
    fits = pool > 0 and capacity >= work.batch * work.context
    reason = (
        None
        if fits
        else (
            f"SGLang's static pool ({fraction} of free memory) leaves {pool / GIB:.1f} GiB of KV for "
            f"{capacity:,} tokens, {work.batch} x {work.context:,} needed"
        )
    )
    concurrency = round(capacity / work.context, 2) if work.context else None
    return plan.Candidate(
        gpu.name,
        tp,
        tp,
        fits,
        reason,
        per_gpu,
        int(capacity),
        concurrency,
        min(capacity // max(work.batch, 1), spec.max_context or capacity),
        memory.kv_heads_per_gpu(spec.num_key_value_heads, tp),
    )


# --------------------------------------------------------------------------- llama.cpp

#: llama.cpp pads the context (KV cells) to a multiple of 256 (llama-context.cpp GGML_PAD).
LLAMACPP_CTX_PAD = 256
#: Defaults of llama-server: n_ubatch 512 tokens per micro-batch.
LLAMACPP_UBATCH = 512
#: Bytes per element of llama.cpp KV cache types (ggml-common.h block sizes).
LLAMACPP_KV_BYTES = {"f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32, "f32": 4.0}


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to


def llamacpp_kv_bytes(
    spec: ModelSpec,
    n_ctx: int,
    kv_type: str = "f16",
    n_seq: int = 1,
    n_ubatch: int = LLAMACPP_UBATCH,
    unified: bool = True,
) -> tuple[int, int]:
    """(full-attention KV bytes, sliding-window KV bytes) for a context of n_ctx cells in total.

    KV per layer per cell = (n_embd_k_gqa + n_embd_v_gqa) x type size; MLA caches the latent.
    SWA layers keep min(n_ctx per sequence, window x streams + n_ubatch) cells, padded to 256."""
    size = LLAMACPP_KV_BYTES[kv_type]
    n_ctx = _pad(n_ctx, LLAMACPP_CTX_PAD)
    per_seq = n_ctx if unified else n_ctx // n_seq
    full = swa = 0.0
    for layer in spec.attention_layers:
        width = (
            spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim
            if spec.mla
            else 2 * layer.num_key_value_heads * spec.head_dim
        )
        if layer.window is None:
            full += n_ctx * width * size
        else:
            streams = 1 if unified else n_seq
            cells = _pad(min(per_seq, layer.window * (n_seq if unified else 1) + n_ubatch), LLAMACPP_CTX_PAD)
            swa += cells * streams * width * size
    return int(full), int(swa)


def llamacpp_compute_bytes(
    spec: ModelSpec,
    n_ctx: int,
    flash_attention: bool = False,
    n_ubatch: int = LLAMACPP_UBATCH,
    output_on_gpu: bool = True,
) -> int:
    """Compute buffer of the worst-case micro-batch on the GPU: without flash attention the f32 KQ
    scores (n_ctx x n_ubatch x heads x 4 B) with one f32 FFN activation, or the f32 logits of the
    micro-batch, whichever is larger (Ollama v0.12.3 GraphSize, fullOffload; 560 MiB for
    Llama-3.1-8B at 8192 cells, as logged)."""
    ub = min(n_ubatch, n_ctx)
    h = spec.hidden_size
    attention = 4 * ub * (1 + 4 * h + (0 if flash_attention else n_ctx * (1 + spec.num_attention_heads)))
    logits = 4 * ub * (h + spec.vocab_size) if output_on_gpu else 4 * ub * h
    return int(max(attention, logits))


@dataclass(frozen=True)
class LlamaCppSplit:
    gpu_layers: int
    gpu_weight_bytes: int
    cpu_weight_bytes: int
    gpu_kv_bytes: int
    cpu_kv_bytes: int
    compute_bytes: int


def llamacpp_split(
    spec: ModelSpec,
    layer_bytes: list[int],
    embd_bytes: int,
    output_bytes: int,
    n_gpu_layers: int,
    n_ctx: int,
    kv_type: str,
    flash_attention: bool,
) -> LlamaCppSplit:
    """Where weights and KV live with `-ngl n_gpu_layers` (the output head counts as one layer,
    offloaded first; the input embedding never leaves the CPU)."""
    n_layer = len(layer_bytes)
    ngl = max(0, min(n_gpu_layers, n_layer + 1))
    output_on_gpu = ngl >= 1
    blocks_on_gpu = max(ngl - 1, 0)
    gpu_blocks = layer_bytes[n_layer - blocks_on_gpu :] if blocks_on_gpu else []
    gpu_weights = sum(gpu_blocks) + (output_bytes if output_on_gpu else 0)
    cpu_weights = sum(layer_bytes) + embd_bytes + output_bytes - gpu_weights
    full, swa = llamacpp_kv_bytes(spec, n_ctx, kv_type)
    kv_total = full + swa
    gpu_kv = kv_total * blocks_on_gpu // n_layer if n_layer else 0
    compute = (
        llamacpp_compute_bytes(
            spec, _pad(n_ctx, LLAMACPP_CTX_PAD), flash_attention, output_on_gpu=output_on_gpu
        )
        if ngl
        else 0
    )
    return LlamaCppSplit(ngl, gpu_weights, cpu_weights, gpu_kv, kv_total - gpu_kv, compute)


def estimated_layer_bytes(
    spec: ModelSpec, counts: ParamCounts, fmt: memory.WeightFormat
) -> tuple[list[int], int, int]:
    """Per-block, embedding and output bytes from config arithmetic (for non-GGUF sources)."""
    from gpusize.params import layer_params

    layers = [
        int(
            layer_params(spec, layer).linear * fmt.linear_bytes
            + layer_params(spec, layer).small * fmt.other_bytes
        )
        for layer in spec.layers
    ]
    embd = int(counts.embedding * fmt.other_bytes)
    output = int(counts.lm_head * fmt.other_bytes) or embd
    return layers, embd, output


def llamacpp_evaluate(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: GpuSpec,
    num_gpus: int,
    work: plan.Workload,
    layer_bytes: list[int],
    embd_bytes: int,
    output_bytes: int,
    n_gpu_layers: int | None = None,
    flash_attention: bool = False,
) -> tuple[plan.Candidate, LlamaCppSplit]:
    """llama.cpp on `num_gpus` GPUs (layers split across them, -sm layer): fits when every GPU holds
    its share of offloaded weights + KV + one compute buffer within its total memory."""
    kv_type = {"fp8": "q8_0", "auto": "f16"}.get(work.kv_dtype, "f16")
    problem = plan.context_problem(spec, work.context)
    n_ctx = work.context * work.batch
    ngl = len(layer_bytes) + 1 if n_gpu_layers is None else n_gpu_layers
    split = llamacpp_split(spec, layer_bytes, embd_bytes, output_bytes, ngl, n_ctx, kv_type, flash_attention)
    capacity = gpu.visible_bytes - memory.CUDA_CONTEXT_TP1
    weights = math.ceil(split.gpu_weight_bytes / num_gpus)
    kv = math.ceil(split.gpu_kv_bytes / num_gpus)
    total = weights + kv + split.compute_bytes
    per_gpu = plan.PerGpu(
        weights,
        kv,
        split.compute_bytes,
        0,
        total,
        capacity,
        capacity - total,
        memory.CUDA_CONTEXT_TP1,
        memory.CUDA_CONTEXT_TP1,
        gpu.visible_bytes,
    )
    reason = problem
    if reason is None and total > capacity:
        reason = (
            f"{split.gpu_layers} offloaded layers need {total / GIB:.1f} GiB per GPU, "
            f"{capacity / GIB:.1f} GiB available; lower --n-gpu-layers (rest in system RAM) or the context"
        )
    host = split.cpu_weight_bytes + split.cpu_kv_bytes
    return plan.Candidate(
        gpu.name,
        num_gpus,
        1,
        reason is None,
        reason,
        per_gpu,
        n_ctx,
        float(work.batch),
        work.context,
        host_bytes=host,
    ), split


# --------------------------------------------------------------------------- transformers


def transformers_evaluate(
    spec: ModelSpec, counts: ParamCounts, gpu: GpuSpec, work: plan.Workload
) -> plan.Candidate:
    """Plain transformers generate on one GPU: weights + a DynamicCache of batch x context tokens +
    the prefill peak (one layer's MLP intermediates and hidden states for the whole prompt, SDPA's
    memory-efficient attention, fp32 logits of the last position) + the CUDA context."""
    problem = plan.context_problem(spec, work.context)
    fmt = plan.weight_format_for(spec, counts, work)
    weights = memory.weights_bytes(spec, counts, fmt, 1) - memory.rope_cache_bytes(spec, fmt)
    kv_bytes = plan.kv_element_bytes(spec, work.kv_dtype)
    per_token = sum(
        memory.kv_bytes_per_token_per_layer(spec, kv_bytes, 1, la.num_key_value_heads)
        for la in spec.attention_layers
    )
    kv = work.batch * work.context * per_token + work.batch * memory.recurrent_state_bytes(spec, kv_bytes)
    tokens = work.batch * work.context
    width = max((la.intermediate_size for la in spec.layers), default=spec.intermediate_size)
    # generate keeps only the last position's logits (logits_to_keep=1), upcast to fp32
    acts = work.batch * spec.vocab_size * 4 + tokens * (3 * width + 4 * spec.hidden_size) * 2
    overhead = memory.CUDA_CONTEXT_TP1
    total = weights + kv + acts + overhead
    per_gpu = plan.PerGpu(
        weights,
        kv,
        acts,
        overhead,
        total,
        gpu.visible_bytes,
        gpu.visible_bytes - total,
        0,
        0,
        gpu.visible_bytes,
    )
    reason = problem or (
        None
        if total <= gpu.visible_bytes
        else f"needs {total / GIB:.1f} GiB, the GPU has {gpu.visible_bytes / GIB:.1f} GiB"
    )
    layout = kvcache.kv_layout(spec, kv_bytes, 1)
    return plan.Candidate(
        gpu.name,
        1,
        1,
        reason is None,
        reason,
        per_gpu,
        None if layout is None else work.context * work.batch,
        float(work.batch),
        work.context,
    )


# --------------------------------------------------------------------------- dispatch


@dataclass(frozen=True)
class EngineOptions:
    """Engine-specific settings and, for GGUF files, the file's own per-layer bytes."""

    n_gpu_layers: int | None = None
    flash_attention: bool = False
    mem_fraction_static: float | None = None
    layer_bytes: tuple[int, ...] | None = None
    embd_bytes: int = 0
    output_bytes: int = 0


DEFAULT_OPTIONS = EngineOptions()


def evaluate(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: GpuSpec,
    n: int,
    work: plan.Workload,
    options: EngineOptions = DEFAULT_OPTIONS,
) -> plan.Candidate:
    """The fit test of `work.engine` on n GPUs of one type."""
    if work.engine == "sglang":
        return sglang_evaluate(spec, counts, gpu, n, work, options.mem_fraction_static)
    if work.engine == "llamacpp":
        if options.layer_bytes is not None:
            layers, embd, out = list(options.layer_bytes), options.embd_bytes, options.output_bytes
        else:
            layers, embd, out = estimated_layer_bytes(
                spec, counts, plan.weight_format_for(spec, counts, work)
            )
        return llamacpp_evaluate(
            spec, counts, gpu, n, work, layers, embd, out, options.n_gpu_layers, options.flash_attention
        )[0]
    if work.engine == "transformers":
        if n != 1:
            return plan.Candidate(gpu.name, n, 1, False, "the transformers model here is single-GPU")
        return transformers_evaluate(spec, counts, gpu, work)
    return plan.evaluate(spec, counts, gpu, n, work)


def smallest_fit(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: GpuSpec,
    work: plan.Workload,
    sizes: tuple[int, ...] = plan.TP_SIZES,
    options: EngineOptions = DEFAULT_OPTIONS,
) -> list[plan.Candidate]:
    """`plan.smallest_fit` with `work.engine`'s memory model."""

    def with_engine(s: ModelSpec, c: ParamCounts, g: GpuSpec, n: int, w: plan.Workload) -> plan.Candidate:
        return evaluate(s, c, g, n, w, options)

    return plan.smallest_fit(spec, counts, gpu, work, sizes, with_engine)
