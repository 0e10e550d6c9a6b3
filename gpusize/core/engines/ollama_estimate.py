"""Ollama's scheduler memory estimate (pure), as ollama/ollama v0.12.3 computes and logs it.

llm/memory.go `estimateGPULayers` with fs/ggml/ggml.go `GraphSize`: per-layer KV for num_ctx x
OLLAMA_NUM_PARALLEL cells, a compute-graph estimate per architecture (full and partial offload), a
one-layer buffer and the GPU library's minimum memory (457 MiB for CUDA and ROCm, discover/gpu.go)
on every GPU used, then the layers placed from the last one down while they fit, the output head
last. What Ollama logs as `memory.required.full` is everything (`TotalSize`), `partial` what goes to
the GPUs (`VRAMSize`), `kv` the KV cache; `ollama ps` shows VRAMSize / TotalSize as the GPU share.
Versions from 0.12.11 on measure the backend's own allocations instead (llm/server.go); their log
lines differ and are not modelled here.
"""

from __future__ import annotations

from gpusize.core.kinds import mixer_kind
from gpusize.core.spec import KV_MIXERS, ModelSpec
from gpusize.dataclass import dataclass
from gpusize.units import MIB

__all__ = [
    "OLLAMA_KV_BYTES",
    "OLLAMA_MINIMUM_MEMORY",
    "OLLAMA_NUM_BATCH",
    "OllamaEstimate",
    "graph_bytes",
    "human_bytes",
    "kv_per_layer",
    "ollama_estimate",
    "projector_bytes",
    "ps_processor",
]

#: discover/gpu.go cudaMinimumMemory = rocmMinimumMemory = 457 MiB (metal: 512 MiB), reserved on
#: every GPU that takes a layer.
OLLAMA_MINIMUM_MEMORY = 457 * MIB
#: api/types.go DefaultOptions NumBatch = 512; GraphSize takes min(num_ctx, num_batch).
OLLAMA_NUM_BATCH = 512
#: fs/ggml/ggml.go kvCacheBytesPerElement: f16 2, q8_0 1, q4_0 0.5 (OLLAMA_KV_CACHE_TYPE, taken only
#: with flash attention); recurrent state f32.
OLLAMA_KV_BYTES = {"f16": 2.0, "q8_0": 1.0, "q4_0": 0.5}
#: gpt-oss: GraphSize gives its sliding layers numParallel x 4096 + batch cells.
_GPTOSS_SLIDING_CELLS = 4096
#: gemma3: every 6th layer global (GraphSize gemma3GlobalCacheCount).
_GEMMA3_GLOBAL_EVERY = 6

#: config.json model_type -> the GGUF general.architecture GraphSize switches on.
_ARCH = {
    "llama": "llama",
    "mistral": "llama",
    "llama4": "llama",
    "qwen2": "qwen2",
    "gemma": "gemma",
    "gemma2": "gemma",
    "gemma3": "gemma3",
    "gemma3_text": "gemma3",
    "gpt_oss": "gptoss",
    "deepseek_v2": "deepseek2",
    "deepseek_v3": "deepseek2",
    "cohere": "command-r",
    "phi": "phi2",
    "mistral3": "mistral3",
}
#: Attention heads of the vision towers VisionGraphSize has a case for (gemma3's SigLIP-So400m and
#: mistral3's Pixtral: num_attention_heads 16 in their configs).
_VISION_HEADS = {"siglip_vision_model": 16, "pixtral": 16}


def architecture(spec: ModelSpec) -> str:
    """The GGUF architecture name Ollama's estimate switches on ('' for one it has no case for)."""
    return _ARCH.get(spec.model_type, "")


def projector_bytes(spec: ModelSpec) -> tuple[int, int]:
    """(weights, graph) of the vision tower Ollama's own engine loads from the model file (GGML
    VisionGraphSize, gemma3 and mistral3): the tower's tensors (F16) and 4 x (image pixels x channels
    + hidden x patch + patches^2 x heads) bytes; (0, 0) for text-only models and other towers."""
    v = spec.vision
    if v is None or architecture(spec) not in ("gemma3", "mistral3") or v.model_type not in _VISION_HEADS:
        return 0, 0
    patches = (v.image_size // v.patch_size) ** 2
    graph = 4 * (
        v.image_size**2 * v.num_channels
        + v.hidden_size * v.patch_size
        + patches**2 * _VISION_HEADS[v.model_type]
    )
    return 2 * v.params, graph


def kv_per_layer(spec: ModelSpec, num_ctx: int, parallel: int, kv_bytes: float, batch: int) -> list[int]:
    """GraphSize's KV bytes per block: cells = num_ctx x parallel, x (k + v head dims) x KV heads x
    the type's bytes; every attention layer at the full context except gemma3's five local layers
    in six (parallel x sliding_window + batch cells) and gpt-oss's even layers (parallel x 4096 +
    batch); recurrent layers their f32 state."""
    arch, cells = architecture(spec), num_ctx * parallel
    d = 2 * spec.head_dim
    out = []
    for i, layer in enumerate(spec.layers):
        state = 4 * mixer_kind(spec, layer).state_elements(spec, layer)  # Falcon-H1: KV and a state
        if layer.mixer not in KV_MIXERS:
            out.append(state)
            continue
        width = (
            mixer_kind(spec, layer).kv_width(spec, layer, layer.num_key_value_heads)
            if spec.mla
            else d * (layer.num_key_value_heads)
        )
        n = cells
        if arch == "gemma3" and (i + 1) % _GEMMA3_GLOBAL_EVERY and layer.window:
            n = parallel * layer.window + batch
        elif arch == "gptoss" and i % 2 == 0:
            n = parallel * _GPTOSS_SLIDING_CELLS + batch
        out.append(int(n * width * kv_bytes) + state)
    return out


def graph_bytes(
    spec: ModelSpec, context: int, batch: int, kv_total: int, flash: bool, parallel: int
) -> tuple[int, int]:
    """(partial offload, full offload) compute-graph bytes of GraphSize for `context` = num_ctx x
    parallel cells; architectures without a case take partial = GQA x KV / 6 and full = partial."""
    arch = architecture(spec)
    e, heads, kv_heads = spec.hidden_size, spec.num_attention_heads, spec.num_key_value_heads
    vocab, hd = spec.vocab_size, spec.head_dim
    full = partial = 0
    if arch == "llama" and spec.moe is None:
        full = max(4 * batch * (1 + 4 * e + context * (1 + heads)), 4 * batch * (e + vocab))
        partial = 4 * batch * e + max(
            4 * batch * (1 + e + max(context, e))
            + e * e * 9 // 16
            + 4 * context * (batch * heads + hd * kv_heads),
            4 * batch * (e + vocab) + e * vocab * 105 // 128,
        )
    elif arch == "qwen2":
        full = max(4 * batch * (e + vocab), 4 * batch * (1 + 2 * e + context + context * heads))
        partial = max(
            4 * batch * (e + vocab) + e * vocab * 105 // 128,
            4 * (batch * (1 + 2 * e + context * (1 + heads)) + e * (1 + context)),
        )
    elif arch in ("gemma", "gemma3"):
        full = max(
            4 * batch * (e + vocab), 4 * batch * (2 + context + context * heads + 2 * e + 2 * hd * heads)
        )
        partial = max(
            4 * e * batch + e * vocab * 105 // 128 + 4 * vocab * batch,
            4 * batch * (2 * e + 1 + 2 * hd * heads + context + context * heads)
            + 4 * hd * context * 8
            + e * hd * heads * 9 // 16,
        )
    elif arch == "gptoss":
        partial = 2 * heads // max(kv_heads, 1) * kv_total // 6
        if flash:
            partial = (4 * parallel + (context >> 10) + 110) * MIB
    if partial == 0:
        partial = heads // max(kv_heads, 1) * kv_total // 6
    return partial, full or partial


@dataclass(frozen=True)
class OllamaEstimate:
    """What estimateGPULayers returns and logs (`msg=offload`)."""

    layers_model: int  # blocks + 1 (the output)
    layers_offload: int
    tensor_split: tuple[int, ...]
    allocations: tuple[int, ...]  # memory.required.allocations, per GPU
    required_full: int  # TotalSize
    required_partial: int  # VRAMSize
    kv_bytes: int
    weights_repeating: int
    weights_nonrepeating: int
    graph_full: int
    graph_partial: int
    projector_bytes: int
    #: Per GPU: (layer weights, their KV) placed there, for the memory table.
    placed_weights: tuple[int, ...]
    placed_kv: tuple[int, ...]

    @property
    def fully_loaded(self) -> bool:
        return self.layers_offload >= self.layers_model


def ollama_estimate(
    blocks: tuple[int, ...],
    kv: list[int],
    output_bytes: int,
    graph: tuple[int, int],
    free: list[int],
    num_gpu: int = -1,
    overhead: int = 0,
    projector: int = 0,
    minimum: int = OLLAMA_MINIMUM_MEMORY,
) -> OllamaEstimate:
    """estimateGPULayers for GPUs with `free` bytes each: a layer goes to GPU i % (GPUs with space)
    while free > overhead + allocated + max(graphs) + layer, from the last block down; the output
    (output_norm + output, or token_embd when tied; plus the vision projector of Ollama-engine
    models) last. `num_gpu` -1 places as many as fit (Modelfile num_gpu otherwise); `minimum` is the
    library's MinimumMemory (0 for Ollama's CPU "GPU", whose free memory is the system's)."""
    partial, full = graph
    if len(free) > 1:
        full = partial  # multi-GPU always uses the partial graph
    graph_max = max(partial, full)
    n = len(blocks)
    alloc = [0] * len(free)
    split = [0] * len(free)
    wts, kvs = [0] * len(free), [0] * len(free)
    buffer = (blocks[0] + kv[0]) if n else 0
    with_space = [i for i, f in enumerate(free) if f >= overhead + graph_max + minimum + 2 * buffer]
    for i in with_space:
        alloc[i] += minimum + buffer
    overflow = 0
    count = 0
    for i in range(n - 1, -1, -1):
        size = blocks[i] + kv[i]
        if 0 <= num_gpu <= count:
            overflow += size
            continue
        for j in range(len(with_space), 0, -1):
            g = with_space[i % j]
            if free[g] > overhead + alloc[g] + graph_max + size:
                alloc[g] += size
                wts[g] += blocks[i]
                kvs[g] += kv[i]
                split[g] += 1
                count += 1
                break
            with_space.pop(i % j)
        if not with_space:
            overflow += size
    fully = count >= n
    last = output_bytes + projector
    if last:
        if num_gpu < 0 or count < num_gpu:
            for j in range(len(with_space), 0, -1):
                g = with_space[count % j]
                if free[g] > overhead + alloc[g] + graph_max + last:
                    alloc[g] += last
                    wts[g] += output_bytes
                    split[g] += 1
                    count += 1
                    break
        if count < n + 1:
            fully = False
            overflow += last
    used_graph = full if fully else partial
    for g in range(len(free)):
        if split[g] > 0:
            alloc[g] += used_graph
    vram = sum(alloc)
    return OllamaEstimate(
        layers_model=n + 1,
        layers_offload=count,
        tensor_split=tuple(split),
        allocations=tuple(alloc),
        required_full=vram + overflow,
        required_partial=vram if count else 0,
        kv_bytes=sum(kv),
        weights_repeating=sum(blocks),
        weights_nonrepeating=output_bytes,
        graph_full=full,
        graph_partial=partial,
        projector_bytes=projector,
        placed_weights=tuple(wts),
        placed_kv=tuple(kvs),
    )


def human_bytes(n: int) -> str:
    """Bytes as Ollama logs them (format.HumanBytes2): one decimal of GiB, MiB or KiB, else bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def ps_processor(estimate: OllamaEstimate) -> str:
    """The PROCESSOR column of `ollama ps` (cmd/cmd.go ListRunningHandler): '100% GPU', '100% CPU' or
    'C%/G% CPU/GPU' with C = round((size - size_vram) / size x 100)."""
    size, vram = estimate.required_full, estimate.required_partial
    if vram == 0:
        return "100% CPU"
    if vram >= size:
        return "100% GPU"
    cpu = round((size - vram) / size * 100)
    return f"{cpu}%/{100 - cpu}% CPU/GPU"
