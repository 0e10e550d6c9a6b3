"""What vLLM holds for LoRA serving (`--enable-lora`), per GPU (pure): the adapter slots it
preallocates when it wraps the model, and the buffers the Punica kernels use.

Slots (vllm/lora/layers/*.py `create_lora_weights`, dtype `lora_dtype`, auto = the model's dtype; one
slot per `--max-loras`, default 1, each of `--max-lora-rank`, default 16, vllm/config/lora.py):

- per packed slice of a column-parallel layer (qkv_proj: q, k, v; gate_up_proj: gate, up):
  lora_a (max_loras, 1, rank, input) and lora_b (max_loras, 1, output/TP, rank). B is sharded by TP,
  A is not (`fully_sharded_loras` off, the default; base_linear.py / column_parallel_linear.py);
  the k and v slices are num_kv_heads/TP heads, at least one (replicated KV heads);
- per row-parallel layer (o_proj, down_proj): lora_a (max_loras, 1, rank, input/TP) and
  lora_b (max_loras, 1, output, rank): A is sharded, B is not (row_parallel_linear.py);
- embed_tokens and lm_head, which the Llama-style model classes list in `embedding_modules`
  (lora/utils.py get_supported_lora_modules): VocabParallelEmbeddingWithLoRA lora_a
  (max_loras, vocab, rank) + lora_b (max_loras, 1, hidden, rank), and LogitsProcessorWithLoRA lora_a
  (max_loras, 1, rank, hidden) + lora_b (max_loras, 1, vocab, rank), both whole on every GPU. The
  releases that still had LoRA extra vocabulary (lora_extra_vocab_size 256) also kept two
  (max_loras, 256, hidden) embedding tables and 256 more vocabulary rows: not counted (8 MiB per
  table for 4 slots of a 4096-wide bf16 model).

They are allocated while the model loads, so they are part of vLLM's "Model loading took" figure and
leave the KV cache that much less. Host RAM: every TP worker keeps up to `--max-cpu-loras` adapters
(default --max-loras) in pinned CPU memory (LRUCacheWorkerLoRAManager), at most the full-rank size.
CUDA graphs: vLLM captures its graphs per LoRA count it specializes on (lora/utils.py
get_captured_lora_counts) in one graph pool; gpusize keeps its graph estimate as it is.
"""

from __future__ import annotations

from gpusize.core.engines.vllm.behaviour import behaviour_of
from gpusize.core.engines.vllm.scheduler import scheduler_limits
from gpusize.core.gpu import GpuSpec
from gpusize.core.lora import LoraModule, lora_modules, moe_layers
from gpusize.core.releases import parse_version
from gpusize.core.reserves import Reserve
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import activation_dtype
from gpusize.core.workload import Workload
from gpusize.errors import InputError
from gpusize.units import DTYPE_BYTES

__all__ = [
    "DEFAULT_MAX_LORAS",
    "DEFAULT_MAX_LORA_RANK",
    "LORA_RANKS",
    "lora_buffers",
    "lora_dtype",
    "lora_host_bytes",
    "lora_note",
    "expert_elements",
    "lora_slot_bytes",
    "lora_slots",
]

#: vllm/config/lora.py LoRAConfig defaults: max_loras 1, max_lora_rank 16.
DEFAULT_MAX_LORAS = 1
DEFAULT_MAX_LORA_RANK = 16
#: The ranks vLLM accepts (vllm/config/lora.py MaxLoRARanks; 1 in the newer releases).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: Punica metadata per batched token (punica_wrapper_gpu.py + LoRAKernelMeta): token_lora_indices,
#: two embeddings_indices rows (int64) and three int32 maps (token_lora_mapping, the sorted token
#: indices, their positions).
PUNICA_BYTES_PER_TOKEN = 3 * 8 + 3 * 4
#: The shrink output buffer of a LoRA layer (column_parallel_linear.py _mcp_apply): float32
#: (n_slices, tokens, rank), at most three slices (qkv_proj).
SHRINK_SLICES, SHRINK_BYTES = 3, 4

#: vLLM wraps the routed experts (FusedMoE) from this release: FusedMoEWithLoRA came with
#: vllm-project/vllm#21229, still in review on 2025-10-05, after 0.11.0 shipped.
MOE_LORA_SINCE = parse_version("0.11.1")

_LORA_DTYPE_NAMES = {"float16": "fp16", "bfloat16": "bf16"}


def lora_dtype(spec: ModelSpec, work: Workload) -> str:
    """The slots' dtype: --lora-dtype, or the model's (activation) dtype for auto."""
    named = work.engine.lora_dtype
    if named and named != "auto":
        return _LORA_DTYPE_NAMES[named]
    weights = work.weights.name
    return weights if weights in ("fp32", "bf16", "fp16") else activation_dtype(spec)


def _settings(work: Workload) -> tuple[int, int]:
    """(max_loras, max_lora_rank), checked as vLLM checks them; InputError names the flag."""
    e = work.engine
    loras, rank = e.max_loras or DEFAULT_MAX_LORAS, e.max_lora_rank or DEFAULT_MAX_LORA_RANK
    if not e.enable_lora:
        given = [
            f
            for f, v in (
                ("--max-loras", e.max_loras),
                ("--max-lora-rank", e.max_lora_rank),
                ("--max-cpu-loras", e.max_cpu_loras),
                ("--lora-dtype", e.lora_dtype),
            )
            if v
        ]
        if given:
            raise InputError(
                f"{given[0]} takes effect only with --enable-lora: add --enable-lora, or remove it"
            )
    if rank not in LORA_RANKS:
        raise InputError(f"invalid --max-lora-rank {rank}: vLLM accepts {', '.join(map(str, LORA_RANKS))}")
    if e.max_cpu_loras is not None and e.max_cpu_loras < loras:
        raise InputError(f"invalid --max-cpu-loras {e.max_cpu_loras}: must be >= --max-loras ({loras})")
    return loras, rank


def _module_elements(m: LoraModule, rank: int, tp: int) -> int:
    """Elements of one slot of one module on one GPU."""
    if m.row_parallel:
        return rank * (m.input_size // tp) + sum(m.output_sizes) * rank
    outputs = [m.output_sizes[0] // tp]
    if m.kv_heads:
        outputs += [max(1, m.kv_heads // tp) * m.head_dim] * (len(m.output_sizes) - 1)
    else:
        outputs += [size // tp for size in m.output_sizes[1:]]
    return len(m.output_sizes) * rank * m.input_size + sum(outputs) * rank


def expert_elements(spec: ModelSpec, rank: int, tp: int, ep: bool) -> int:
    """Elements of one slot of every routed expert on one GPU (vllm/lora/layers/fused_moe.py): w13
    lora_a (max_loras, experts, rank, hidden) and lora_b (max_loras, experts, intermediate, rank) per
    slice (gate, up), w2 lora_a (max_loras, experts, rank, intermediate) and lora_b
    (max_loras, experts, hidden, rank); the local experts and intermediate_size_per_partition as the
    base layer has them (TP: every expert, intermediate / TP; expert parallel: experts / TP, whole)."""
    if spec.moe is None:
        return 0
    experts = spec.moe.num_experts // tp if ep else spec.moe.num_experts
    width = spec.moe.moe_intermediate_size if ep else spec.moe.moe_intermediate_size // tp
    slices = 2 if spec.gated_mlp else 1
    per_expert = slices * (rank * spec.hidden_size + width * rank) + rank * width + spec.hidden_size * rank
    return moe_layers(spec) * experts * per_expert


def lora_slot_bytes(
    spec: ModelSpec,
    tp: int,
    loras: int,
    rank: int,
    element_bytes: float,
    experts: bool = False,
    ep: bool = False,
) -> int:
    """Bytes of `loras` adapter slots of `rank` on one of `tp` GPUs (the module docstring's shapes),
    with the routed experts' slots when `experts`."""
    modules, _ = lora_modules(spec)
    elements = sum(_module_elements(m, rank, tp) for m in modules)
    elements += 2 * rank * (spec.vocab_size + spec.hidden_size)  # embed_tokens + lm_head, whole
    if experts:
        elements += expert_elements(spec, rank, tp, ep)
    return int(loras * elements * element_bytes)


def _experts(spec: ModelSpec, work: Workload) -> tuple[bool, bool]:
    """(the release wraps the routed experts, expert parallel)."""
    since = MOE_LORA_SINCE
    wrapped = spec.moe is not None and since is not None and work.release.version >= since
    return wrapped, wrapped and work.engine.enable_expert_parallel


def lora_slots(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """The adapter slots on one GPU, None without --enable-lora."""
    loras, rank = _settings(work)
    if not work.engine.enable_lora:
        return None
    dtype = lora_dtype(spec, work)
    _, complete = lora_modules(spec)
    experts, ep = _experts(spec, work)
    how = (
        f"{loras} LoRA slot(s) x rank {rank} in {dtype}: A and B of qkv/o/gate_up/down per layer, "
        "B of column-parallel and A of row-parallel layers split by TP, embed_tokens and lm_head whole "
        "(vllm/lora/layers create_lora_weights)"
    )
    if experts:
        how += ", and of every routed expert (fused_moe.py)"
    elif spec.moe is not None:
        how += f"; vLLM {work.release.version} puts no LoRA on the routed experts"
    if not complete:
        how += "; layers other than attention, MLP and experts (MLA, linear attention, Mamba) not counted"
    held = lora_slot_bytes(spec, tp, loras, rank, DTYPE_BYTES[dtype], experts, ep)
    return Reserve("lora_slots", held, how, not complete or (experts and not spec.gated_mlp))


def lora_buffers(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """The Punica metadata and the largest shrink buffer for max_num_batched_tokens tokens."""
    _, rank = _settings(work)
    if not work.engine.enable_lora:
        return None
    tokens = scheduler_limits(gpu, work, behaviour_of(work, spec)).max_num_batched_tokens
    held = tokens * (PUNICA_BYTES_PER_TOKEN + SHRINK_SLICES * rank * SHRINK_BYTES)
    how = (
        f"Punica token maps and the float32 shrink buffer (3 x {tokens:,} tokens x rank {rank}) "
        "of the LoRA kernels (vllm/lora/punica_wrapper)"
    )
    return Reserve("lora_buffers", held, how, True)


def lora_host_bytes(spec: ModelSpec, tp: int, work: Workload) -> int:
    """Pinned CPU memory of the adapter cache: --max-cpu-loras adapters at full rank, whole (unsharded),
    on each of the `tp` workers; 0 without --enable-lora. An upper bound: smaller ranks take less."""
    if not work.engine.enable_lora:
        return 0
    loras, rank = _settings(work)
    cached = work.engine.max_cpu_loras or loras
    experts, _ = _experts(spec, work)
    return tp * lora_slot_bytes(spec, 1, cached, rank, DTYPE_BYTES[lora_dtype(spec, work)], experts)


def lora_note(work: Workload) -> str | None:
    """What --enable-lora holds outside the GPU budget, for the answer's notes; None without it."""
    if not work.engine.enable_lora:
        return None
    cached = work.engine.max_cpu_loras or work.engine.max_loras or DEFAULT_MAX_LORAS
    return (
        f"--enable-lora: each worker keeps up to {cached} adapter(s) in pinned CPU memory (--max-cpu-loras; "
        "host_bytes counts them whole at --max-lora-rank, an upper bound); CUDA graphs are captured per "
        "LoRA count in the same graph pool, which gpusize does not enlarge"
    )
