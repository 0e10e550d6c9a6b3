"""Planning (pure): the candidate type every engine returns, the tensor-parallel validity rules, the
smallest fitting split and the recommendation across GPU types.

An engine's memory model (`core.engines`) answers "does this model fit on n GPUs of this type?" as a
`Candidate`; this module asks it for 1, 2, 4 and 8 GPUs in one server and picks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpusize.core import kinds
from gpusize.core.gpu import GpuSpec
from gpusize.core.reserves import Reserve
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass

__all__ = [
    "TP_SIZES",
    "Candidate",
    "Evaluator",
    "PerGpu",
    "context_problem",
    "ranked",
    "recommend",
    "smallest_fit",
    "split_problem",
    "thin_margin",
    "yarn_caveat",
    "yarn_flag",
]

#: GPU counts of one server: tensor-parallel sizes 1, 2, 4 and 8.
TP_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True, kw_only=True)
class PerGpu:
    """Bytes on one GPU. `usable_bytes` is the engine's budget; the CUDA context and graph pool
    (`outside_budget_bytes`) must fit in what is left of the device (`outside_budget_limit_bytes`)."""

    weights_bytes: int
    kv_cache_bytes: int
    activations_bytes: int
    overhead_bytes: int
    total_bytes: int
    usable_bytes: int
    headroom_bytes: int
    outside_budget_bytes: int
    outside_budget_limit_bytes: int
    visible_bytes: int
    #: PyTorch engines (transformers): `torch.cuda.max_memory_allocated` at the peak, and what
    #: nvidia-smi shows (reserved peak + CUDA context), the figure `fits` is decided on. None for the
    #: engines that budget a fraction of the GPU (vLLM, SGLang, llama.cpp).
    allocated_peak_bytes: int | None = None
    device_bytes: int | None = None
    #: Memory the engine reserves under its own flags (LoRA slots, a draft model, ...), each inside
    #: `total_bytes` and taken from the KV pool (core/reserves.py).
    reserves: tuple[Reserve, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One model on `num_gpus` GPUs of one type: fits or not, why, and what it holds."""

    gpu: str
    gpu_full_name: str
    num_gpus: int
    tensor_parallel: int
    pipeline_parallel: int = 1
    fits: bool
    reason: str | None = None
    per_gpu: PerGpu | None = None
    kv_cache_capacity_tokens: int | None = None
    max_concurrency: float | None = None
    max_context_tokens: int | None = None
    kv_heads_per_gpu: int | None = None
    kv_heads_replicated: bool = False
    warning: str | None = None
    #: The plan holds the requests by less than the engine's error on public start-up logs
    #: (`thin_margin` below): the verdict stands, the next size up is the safe choice.
    thin_margin: bool = False
    #: System RAM the engine needs beside the GPUs (llama.cpp layers and KV left on the CPU).
    host_bytes: int | None = None
    #: Indicative USD per hour for all `num_gpus` GPUs (None when the GPU is unpriced).
    usd_per_hour: float | None = None


def thin_margin(max_concurrency: float | None, sequences: int, margin: float | None) -> bool:
    """The one margin rule of every command that says yes to a load (fit --batch, serve, quote, curve):
    a pool that holds `sequences` by less than `margin` (the engine's error on public start-up logs,
    `Levers.thin_margin`; None: no such margin) is a thin yes: max_concurrency < sequences x (1 + margin)."""
    if margin is None or max_concurrency is None or sequences < 1 or max_concurrency < sequences:
        return False
    return max_concurrency < sequences * (1 + margin)


def refused(gpu: GpuSpec, n: int, reason: str, tp: int | None = None) -> Candidate:
    """A candidate that cannot run at all (invalid split, context beyond the model's maximum)."""
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=n,
        tensor_parallel=n if tp is None else tp,
        fits=False,
        reason=reason,
        usd_per_hour=gpu.price_for(n),
    )


Evaluator = Callable[[ModelSpec, GpuSpec, int, Workload], Candidate]


def split_problem(
    spec: ModelSpec,
    tp: int,
    fp8_block: tuple[int, int] | None,
    expert_parallel: bool = False,
    whole_experts: str = "",
    experts_over: int | None = None,
) -> str | None:
    """Why tensor-parallel size `tp` is not a valid split of this model, or None. With expert
    parallelism the experts are not sliced, so only their full width meets the FP8 blocks.
    `whole_experts`: how the engine keeps the experts whole, said beside a block refusal;
    `experts_over`: the GPUs the routed experts spread over where that is not `tp` (vLLM's data
    parallel: every GPU of its ranks, while attention keeps each rank's TP)."""
    over = experts_over or tp
    return kinds.tp_problem(spec, tp) or _expert_problem(
        spec, over, fp8_block, expert_parallel, whole_experts
    )


def _expert_problem(
    spec: ModelSpec, tp: int, fp8_block: tuple[int, int] | None, expert_parallel: bool, whole_experts: str
) -> str | None:
    """Why the routed experts cannot be split over `tp` GPUs (sliced, or whole), or None."""
    if spec.moe and expert_parallel and tp > spec.moe.num_experts:
        experts = spec.moe.num_experts
        return f"expert parallel over {tp} GPUs needs at least {tp} experts; the model has {experts}"
    width = spec.moe.moe_intermediate_size // (1 if expert_parallel else tp) if spec.moe else 0
    if spec.moe and fp8_block and width % fp8_block[1]:
        hint = "" if expert_parallel or not whole_experts else f"; {whole_experts}"
        return (
            f"TP={tp} leaves {width} expert columns per GPU, not a multiple of the "
            f"checkpoint's {fp8_block[1]}-wide FP8 blocks{hint}"
        )
    return None


def context_problem(spec: ModelSpec, context: int) -> str | None:
    """A context longer than the model allows is refused by the engine at start-up."""
    if spec.max_context and context > spec.max_context:
        return (
            f"context {context:,} exceeds the model's maximum of {spec.max_context:,} tokens "
            f"(max_position_embeddings / rope_scaling)"
        )
    return None


def yarn_flag(spec: ModelSpec, context: int) -> str | None:
    """The `--rope-scaling` that reaches `context` by YaRN, for a RoPE model whose config declares no
    rope scaling: yarn:FACTOR:ORIGINAL with ORIGINAL max_position_embeddings rounded down to a power
    of two (Qwen3 configs state 40,960 = 32,768 pre-training positions + 8,192 for the reply; their
    model cards enable YaRN as factor 4 over 32,768) and FACTOR the smallest integer that covers the
    context (at most 64, the most --rope-scaling accepts). None when YaRN does not apply (learned
    positions, a rope scaling already set) or would need a larger factor."""
    positions = spec.max_position_embeddings
    if not positions or spec.learned_position_embeddings or spec.rope_scaling:
        return None
    original = 1 << (positions.bit_length() - 1)
    factor = -(-context // original)
    if factor < 2 or factor > 64:
        return None
    return f"--rope-scaling yarn:{factor}:{original}"


#: The YaRN factor the model cards that enable it state (Qwen/Qwen3-32B and Qwen2.5 READMEs:
#: "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}).
YARN_CARD_FACTOR = 4


def yarn_caveat(spec: ModelSpec, context: int) -> str:
    """A warning to follow `yarn_flag` when its factor is beyond what model cards state ("" if not)."""
    flag = yarn_flag(spec, context)
    if not flag:
        return ""
    factor, original = (int(x) for x in flag.rsplit(" ", 1)[1].split(":")[1:])
    if factor <= YARN_CARD_FACTOR:
        return ""
    return (
        f"; a factor of {factor} is beyond the factor {YARN_CARD_FACTOR} model cards state "
        f"({YARN_CARD_FACTOR * original:,} tokens): quality there is untested"
    )


def smallest_fit(
    spec: ModelSpec, gpu: GpuSpec, work: Workload, evaluate: Evaluator, sizes: Iterable[int] = TP_SIZES
) -> list[Candidate]:
    """Candidates in increasing size up to and including the first that fits."""
    out = []
    for n in sizes:
        candidate = evaluate(spec, gpu, n, work)
        out.append(candidate)
        if candidate.fits:
            break
    return out


def ranked(best: list[Candidate]) -> list[Candidate]:
    """The candidates that fit, best first: fewest GPUs, then lowest indicative price for the whole
    server (unpriced last), then name."""
    fitting = [c for c in best if c.fits]
    return sorted(fitting, key=lambda c: (c.num_gpus, c.usd_per_hour or float("inf"), c.gpu))


def recommend(best: list[Candidate]) -> Candidate | None:
    """The best of `ranked`, or None when nothing fits."""
    fitting = ranked(best)
    return fitting[0] if fitting else None
