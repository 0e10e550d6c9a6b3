"""llama.cpp's memory model (pure), following ggml-org/llama.cpp@0c1e57098 (Nov 2025).

The input embedding stays on the CPU; layers are offloaded from the end, the output head counting as
a layer and going first; KV = n_ctx (padded to 256) x layers x (k + v widths) x type size, with
sliding-window layers holding min(n_ctx, window + n_ubatch) cells, plus the recurrent layers' f32
state per sequence (`llamacpp_state_bytes`); the compute buffer holds the KQ
scores (without flash attention) or the logits of one micro-batch, whichever is larger. With several
GPUs the layers are split across them (`-sm layer`). Weights come from the GGUF file tensor by tensor
when there is one, else from config arithmetic.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from gpusize.core import runtime
from gpusize.core.engines.base import EngineModel
from gpusize.core.gpu import GpuSpec
from gpusize.core.kinds import state_elements
from gpusize.core.kvcache import kv_width
from gpusize.core.levers import Levers, Variant, one
from gpusize.core.plan import Candidate, PerGpu, context_problem
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import estimated_layers
from gpusize.core.workload import Workload
from gpusize.units import GIB

__all__ = [
    "ENGINE",
    "LLAMACPP_CTX_PAD",
    "LLAMACPP_KV_BYTES",
    "LEVERS",
    "LLAMACPP_UBATCH",
    "LlamaCppSplit",
    "cache_type",
    "evaluate",
    "flash_attention",
    "llamacpp_compute_bytes",
    "llamacpp_kv_bytes",
    "llamacpp_split",
    "llamacpp_state_bytes",
    "offload_variant",
    "refusal",
]

VERSION = "0c1e57098 (Nov 2025)"
#: llama.cpp pads the context (KV cells) to a multiple of 256 (llama-context.cpp GGML_PAD).
LLAMACPP_CTX_PAD = 256
#: Defaults of llama-server: n_ubatch 512 tokens per micro-batch.
LLAMACPP_UBATCH = 512
#: Bytes per element of llama.cpp KV cache types (`-ctk/-ctv`, common/arg.cpp kv_cache_types), from
#: ggml-common.h block sizes: q8_0 = fp16 scale + 32 int8 per 32; q4_0 = scale + 16 B; q4_1 = scale,
#: min + 16 B; q5_0 = scale + 4 B high bits + 16 B; q5_1 = scale, min + 4 + 16 B; iq4_nl = scale + 16 B.
LLAMACPP_KV_BYTES = {
    "f32": 4.0,
    "f16": 2.0,
    "bf16": 2.0,
    "q8_0": 34 / 32,
    "q4_0": 18 / 32,
    "q4_1": 20 / 32,
    "iq4_nl": 18 / 32,
    "q5_0": 22 / 32,
    "q5_1": 24 / 32,
}
#: llama-server's cache type when -ctk/-ctv are not given (common/common.h cache_type_k = F16).
LLAMACPP_KV_DEFAULT = "f16"
#: Flash attention when the user sets neither --flash-attn nor --no-flash-attn: the modelled release
#: defaults `-fa` to auto (common/common.h `flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO`, since
#: ggml-org/llama.cpp#15434, Aug 2025), which llama_context turns on when the device supports flash
#: attention for the model's head sizes, as CUDA does on every NVIDIA GPU gpusize lists.
LLAMACPP_FLASH_ATTN_DEFAULT = True
#: KV cache types that are quantized: llama.cpp refuses such a V cache without flash attention
#: (llama-context.cpp: "V cache quantization requires flash_attn").
LLAMACPP_QUANTIZED_KV = frozenset(k for k in LLAMACPP_KV_BYTES if k not in ("f32", "f16", "bf16"))


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to


#: Cached: a fit over llama.cpp asks for the same context's KV at every -ngl it tries (the offload
#: search bisects the layer count), and a batch asks again on every row; the loop is over all layers.
@functools.lru_cache(maxsize=1024)
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
        width = kv_width(spec, layer.num_key_value_heads, layer)
        if layer.window is None:
            full += n_ctx * width * size
        else:
            streams = 1 if unified else n_seq
            cells = _pad(min(per_seq, layer.window * (n_seq if unified else 1) + n_ubatch), LLAMACPP_CTX_PAD)
            swa += cells * streams * width * size
    return int(full), int(swa)


#: llama.cpp keeps the recurrent layers' conv (r) and SSM (s) states in f32 whatever -ctk/-ctv say
#: (llama-model.cpp create_memory: llama_memory_recurrent / llama_memory_hybrid built with
#: GGML_TYPE_F32 for type_r and type_s), one cell per sequence (mem_size = max(1, n_seq_max)).
LLAMACPP_STATE_BYTES = 4


def llamacpp_state_bytes(spec: ModelSpec, n_seq: int = 1) -> int:
    """Recurrent state of every Mamba-2 / DeltaNet layer for `n_seq` sequences (-np): each layer's
    n_embd_r (conv window) + n_embd_s (SSM state) elements in f32, per sequence cell."""
    return state_elements(spec) * LLAMACPP_STATE_BYTES * max(1, n_seq)


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
    n_seq: int = 1,
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
    kv_total = full + swa + llamacpp_state_bytes(spec, n_seq)  # the state follows its layers' devices
    gpu_kv = kv_total * blocks_on_gpu // n_layer if n_layer else 0
    compute = (
        llamacpp_compute_bytes(
            spec, _pad(n_ctx, LLAMACPP_CTX_PAD), flash_attention, output_on_gpu=output_on_gpu
        )
        if ngl
        else 0
    )
    return LlamaCppSplit(ngl, gpu_weights, cpu_weights, gpu_kv, kv_total - gpu_kv, compute)


def flash_attention(work: Workload) -> bool:
    """Whether llama.cpp runs flash attention: the user's -fa on|off, else the release's default.
    Every llama.cpp answer (sizing, settings, launch command) reads this one decision."""
    return LLAMACPP_FLASH_ATTN_DEFAULT if work.engine.flash_attn is None else work.engine.flash_attn


def refusal(work: Workload) -> str | None:
    """llama.cpp's refusal to start with these settings (a quantized V cache without flash
    attention), as a message saying what to change; None when it starts."""
    kind = cache_type(work)
    if kind in LLAMACPP_QUANTIZED_KV and not flash_attention(work):
        return (
            f"--kv-dtype {work.kv_cache_dtype} is a {kind} cache in llama.cpp, and llama.cpp refuses a "
            "quantized V cache without flash attention: drop --no-flash-attn or the --kv-dtype"
            if kind != work.kv_cache_dtype
            else f"--kv-dtype {kind} is a quantized cache, and llama.cpp refuses a quantized V cache "
            "without flash attention: drop --no-flash-attn or the --kv-dtype"
        )
    return None


def cache_type(work: Workload) -> str:
    """llama.cpp's cache type: its own name as asked, else the nearest it has (fp8 -> q8_0)."""
    if work.kv_cache_dtype in LLAMACPP_KV_BYTES:
        return work.kv_cache_dtype
    return {"fp8": "q8_0", "fp32": "f32"}.get(work.kv_cache_dtype, LLAMACPP_KV_DEFAULT)


def evaluate(spec: ModelSpec, gpu: GpuSpec, num_gpus: int, work: Workload) -> Candidate:
    """llama.cpp on `num_gpus` GPUs (layers split across them, -sm layer): fits when every GPU holds
    its share of offloaded weights + KV + one compute buffer within its total memory."""
    return split_candidate(spec, gpu, num_gpus, work)[0]


def split_candidate(
    spec: ModelSpec, gpu: GpuSpec, num_gpus: int, work: Workload
) -> tuple[Candidate, LlamaCppSplit]:
    stored = work.stored_layers or estimated_layers(spec, work.weights)
    n_ctx = work.context_tokens * work.batch
    ngl = len(stored.layer_bytes) + 1 if work.engine.n_gpu_layers is None else work.engine.n_gpu_layers
    output = stored.output_bytes or stored.token_embd_bytes
    split = llamacpp_split(
        spec,
        list(stored.layer_bytes),
        stored.token_embd_bytes,
        output,
        ngl,
        n_ctx,
        cache_type(work),
        flash_attention(work),
        work.batch,
    )
    context = runtime.CUDA_CONTEXT_TP1
    capacity = gpu.visible_bytes - context
    weights = math.ceil(split.gpu_weight_bytes / num_gpus)
    kv = math.ceil(split.gpu_kv_bytes / num_gpus)
    total = weights + kv + split.compute_bytes
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=kv,
        activations_bytes=split.compute_bytes,
        overhead_bytes=0,
        total_bytes=total,
        usable_bytes=capacity,
        headroom_bytes=capacity - total,
        outside_budget_bytes=context,
        outside_budget_limit_bytes=context,
        visible_bytes=gpu.visible_bytes,
    )
    reason = context_problem(spec, work.context_tokens)
    if reason is None and total > capacity:
        reason = (
            f"{split.gpu_layers} layers in GPU memory (offloaded) need {total / GIB:.1f} GiB per GPU, "
            f"{capacity / GIB:.1f} GiB available; lower --n-gpu-layers (rest in system RAM) or the context"
        )
    candidate = Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=num_gpus,
        tensor_parallel=1,
        fits=reason is None,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=n_ctx,
        max_concurrency=float(work.batch),
        max_context_tokens=work.context_tokens,
        host_bytes=split.cpu_weight_bytes + split.cpu_kv_bytes,
        usd_per_hour=gpu.price_for(num_gpus),
    )
    return candidate, split


def effective_settings(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> dict[str, float | int | str]:
    stored = work.stored_layers or estimated_layers(spec, work.weights)
    ngl = len(stored.layer_bytes) + 1 if work.engine.n_gpu_layers is None else work.engine.n_gpu_layers
    return {
        "n_gpu_layers": ngl,
        "flash_attn": "on" if flash_attention(work) else "off",
        "cache_type": cache_type(work),
        "ubatch_size": LLAMACPP_UBATCH,
        "split_mode": work.engine.split_mode or "layer",
    }


def offload_variant(spec: ModelSpec, work: Workload, gpu: GpuSpec, n: int) -> Variant | None:
    """The most layers on the GPUs (-ngl) that fit; the rest run from system RAM. None when not one
    layer fits."""
    layers = spec.num_hidden_layers + 1  # the output head counts as one layer
    lo, hi = 0, min(work.engine.n_gpu_layers or layers, layers) - 1
    while lo < hi:  # the largest count that fits
        mid = (lo + hi + 1) // 2
        fits = evaluate(spec, gpu, n, replace(work, engine=replace(work.engine, n_gpu_layers=mid))).fits
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    if lo < 1:
        return None
    fewer = replace(work, engine=replace(work.engine, n_gpu_layers=lo))
    host = evaluate(spec, gpu, n, fewer).host_bytes or 0
    note = (
        f"the other layers run from system RAM ({host / GIB:.1f} GiB), at the host's bandwidth: much slower"
    )
    return one("offload", "--n-gpu-layers", str(lo), f"{lo} of {layers} layers", note, fewer)


#: Fix-suggestion levers (core/levers.py): layers left in system RAM; a q8_0 or q4_0 KV cache.
LEVERS = Levers(
    kv_types=("q8_0", "q4_0"),
    kv_note="llama-server -ctk {kind} -ctv {kind} (a quantized V cache needs flash attention, on by default)",
    offload=offload_variant,
)

ENGINE = EngineModel(
    name="llamacpp",
    version=f"llama.cpp {VERSION}",
    note="llama.cpp: layers offloaded from the end (output head first), input embedding on the CPU; KV "
    "padded to 256 cells; compute buffer of one 512-token micro-batch",
    evaluate=evaluate,
    effective_settings=effective_settings,
    levers=LEVERS,
    kv_cache_types=LLAMACPP_KV_BYTES,
    kv_default=LLAMACPP_KV_DEFAULT,
    serves=True,
    splits_layers=True,
    refuses_context=lambda spec, work: refusal(work),
    prefix_cache="llama-server's per-slot prompt cache (cache_prompt, on by default: a request reuses "
    "the prefix it shares with the slot's previous prompt)",
)
