"""What SGLang holds for LoRA serving (`--lora-paths`, `--enable-lora` from 0.4.9.post3), per GPU (pure).

LoRAMemoryPool (python/sglang/srt/lora/mem_pool.py, `get_lora_A_shape` / `get_lora_B_shape`) keeps,
for every layer and target module, A_buffer (max_loras_per_batch, rank x c, input) and B_buffer
(max_loras_per_batch, output, rank) in the base model's dtype, c being the module's stacked slices
(get_stacked_multiply: qkv_proj 3, gate_up_proj 2, else 1). Under TP the input of a row-parallel module
(o_proj, down_proj: ROW_PARALLELISM_LINEAR_LORA_NAMES) is divided by TP, the output of every other
module is (get_hidden_dim, then divide). `--max-loras-per-batch` defaults to 8 (server_args.py); the
rank is `--max-lora-rank` or the largest among the adapters; the target modules are
`--lora-target-modules` or the adapters' own: gpusize counts q, k, v, o, gate, up and down (what
"all-linear" adapters train), no embeddings or lm_head. The pool is built while the model runner
initialises, before the KV pool is sized from the free memory, so it takes KV tokens away.

Host RAM: every TP worker loads each adapter of --lora-paths whole into CPU memory (LoRAManager,
LoRAAdapter.initialize_weights), at most the full-rank size of the counted modules.
"""

from __future__ import annotations

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
    "ASSUMED_RANK",
    "DEFAULT_MAX_LORAS_PER_BATCH",
    "adapter_count",
    "sglang_lora_host_bytes",
    "sglang_lora_slot_bytes",
    "sglang_lora_slots",
]

#: server_args.py: max_loras_per_batch = 8.
DEFAULT_MAX_LORAS_PER_BATCH = 8
#: The rank gpusize sizes with when --max-lora-rank is not given (SGLang takes the adapters' largest,
#: which gpusize does not read): vLLM's default, the commonest adapter rank.
ASSUMED_RANK = 16
#: --enable-lora (and --max-lora-rank), so LoRA without --lora-paths, from this release: both first in
#: the 0.4.9.post3 wheel's server_args.py (absent in 0.4.9.post2; read with bench/release_sources.py).
ENABLE_FLAG_SINCE = "0.4.9.post3"


def _before(work: Workload, release: str) -> bool:
    since = parse_version(release)
    return since is not None and work.release.version < since


def adapter_count(work: Workload) -> int:
    """The adapters named in --lora-paths (space-separated NAME=PATH or PATH)."""
    return len((work.engine.lora_paths or "").split())


def _element_bytes(spec: ModelSpec, work: Workload) -> float:
    weights = work.weights.name
    return DTYPE_BYTES[weights if weights in ("fp32", "bf16", "fp16") else activation_dtype(spec)]


def _module_elements(m: LoraModule, rank: int, tp: int) -> int:
    stacked, output = len(m.output_sizes), sum(m.output_sizes)
    if m.row_parallel:
        return rank * stacked * (m.input_size // tp) + output * rank
    return rank * stacked * m.input_size + (output // tp) * rank


def sglang_lora_slot_bytes(spec: ModelSpec, tp: int, slots: int, rank: int, element_bytes: float) -> int:
    """Bytes of the LoRA memory pool on one of `tp` GPUs (the module docstring's shapes)."""
    modules, _ = lora_modules(spec)
    return int(slots * sum(_module_elements(m, rank, tp) for m in modules) * element_bytes)


def _on(work: Workload) -> bool:
    e = work.engine
    if e.enable_lora and not e.lora_paths and _before(work, ENABLE_FLAG_SINCE):
        raise InputError(
            f"SGLang {work.release.version} has no --enable-lora: name the adapters with --lora-paths"
        )
    on = e.enable_lora or adapter_count(work) > 0
    if not on and (e.max_loras_per_batch or e.max_lora_rank):
        flag = "--max-loras-per-batch" if e.max_loras_per_batch else "--max-lora-rank"
        raise InputError(
            f"{flag} takes effect only with --lora-paths or --enable-lora: add one, or remove it"
        )
    return on


def sglang_lora_slots(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """The LoRA memory pool on one GPU; None without LoRA."""
    if not _on(work):
        return None
    slots = work.engine.max_loras_per_batch or DEFAULT_MAX_LORAS_PER_BATCH
    rank = work.engine.max_lora_rank or ASSUMED_RANK
    _, complete = lora_modules(spec)
    complete = complete and not moe_layers(spec)
    how = (
        f"{slots} LoRA buffer slot(s) x rank {rank}: A and B of q/k/v, o, gate/up, down per layer, "
        "row-parallel inputs and other outputs split by TP (sglang/srt/lora/mem_pool.py)"
    )
    if work.engine.max_lora_rank is None:
        how += f"; rank {ASSUMED_RANK} assumed (SGLang takes the adapters' largest: give --max-lora-rank)"
    if not complete:
        how += "; layers other than attention + dense MLP (routed experts, MLA, ...) not counted"
    held = sglang_lora_slot_bytes(spec, tp, slots, rank, _element_bytes(spec, work))
    return Reserve("lora_slots", held, how, estimate=not complete or work.engine.max_lora_rank is None)


def sglang_lora_host_bytes(spec: ModelSpec, tp: int, work: Workload) -> int:
    """CPU memory of the adapters of --lora-paths: each whole, at full rank, on each of `tp` workers."""
    count = adapter_count(work)
    if not count:
        return 0
    rank = work.engine.max_lora_rank or ASSUMED_RANK
    return tp * sglang_lora_slot_bytes(spec, 1, count, rank, _element_bytes(spec, work))
