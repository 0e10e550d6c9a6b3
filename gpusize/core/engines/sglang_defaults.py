"""SGLang's defaults by release (pure): the default mem_fraction_static (nine formulas in
server_args.py over the releases), the chunked prefill and CUDA-graph batch sizes behind it, and the
running-request cap, each read from the release's source. Part of `core.engines.sglang`."""

from __future__ import annotations

from gpusize.core.engines.sglang_dp import dp_graph_reserve_mib, dp_size
from gpusize.core.engines.sglang_speculative import (
    SPECULATIVE_RUNNING_REQUESTS,
    caps_running_requests,
    speculative_reserve_mib,
)
from gpusize.core.engines.sglang_vlm import VLM_FRACTION_SINCE, served_multimodal, vlm_fraction
from gpusize.core.engines.vllm.scheduler import scheduler_limits
from gpusize.core.gpu import GpuSpec
from gpusize.core.releases import SGLANG, Version, parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass
from gpusize.units import GIB

__all__ = [
    "DIST_INIT_TPN",
    "MAX_PREFILL_TOKENS",
    "SglangDefaults",
    "default_running_requests",
    "mem_fraction",
    "release_version",
    "sglang_defaults",
    "workload_defaults",
]

#: Memory SGLang's own distributed init takes on each GPU at TP >= 2 before it reads "free memory before
#: the weights" (~0.13 GB in an SGLang TP4 start-up log quoted in the project's issue report); vLLM's
#: 2.07 GiB CUDA context at TP >= 2 includes its NCCL profile buffers, which SGLang allocates later.
DIST_INIT_TPN = int(0.13 * GIB)
#: ServerArgs.max_prefill_tokens default: the prefill batch the 0.5.3+ reserve sizes for when chunked
#: prefill is off (--chunked-prefill-size -1: "reserved_mem += max(self.max_prefill_tokens, 2048) * 1.5").
MAX_PREFILL_TOKENS = 16384


@dataclass(frozen=True)
class SglangDefaults:
    """SGLang's defaults for one GPU and release: chunked prefill size, CUDA-graph batch limit and
    static memory fraction."""

    chunked_prefill: int
    cuda_graph_max_bs: int
    mem_fraction_static: float


def release_version(text: str) -> Version:
    """A release string of the modelled range as a Version (a typo here is a bug: asserted)."""
    version = parse_version(text)
    assert version is not None
    return version


def _chunk_and_graph(v: Version, gib: float, tp: int) -> tuple[int, int]:
    """server_args.py defaults of chunked_prefill_size and cuda_graph_max_bs by nvidia-smi total (GiB)."""
    small = tp < 4
    if v < release_version("0.4.7.post1"):
        big = gib * 1024 > 180000 and v >= release_version("0.4.7")
        chunk = 16384 if big else 2048 if gib * 1024 < 25000 else 8192
        graph = (8 if small else 80) if gib * 1024 < 25000 else 512 if big else 160
        return chunk, graph
    if v < release_version("0.5.3"):
        chunk = 2048 if gib < 35 else 8192 if gib < 160 else 16384
        graph = (8 if small else 80) if gib < 35 else 512 if gib * 1024 > 160000 else 256 if gib > 90 else 160
        return chunk, graph
    new, mid = v >= release_version("0.5.20"), v >= release_version("0.5.4.post1")
    tiers = (
        (20, 2048, 8, 8),
        (35, 4096 if new else 2048, *((48, 160) if new else (24, 80) if mid else (16, 80))),
        (60, 4096, 32, 160),
        (160, 8192, 256, 512),
    )  # fmt: skip
    for limit, chunk, graph_small, graph_large in tiers:
        if gib < limit:
            return chunk, graph_small if small else graph_large
    return 16384, 512


def _pcg_sizes(maximum: int) -> int:
    """Piecewise CUDA-graph capture sizes (0.5.10+): 4..32 by 4, 48..256 by 16, 288..512 by 32,
    576..1024 by 64, 1280..4096 by 256, then by 512 up to the chunked prefill size."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64)]
    sizes += [*range(1280, 4097, 256), *range(4608, 1 << 20, 512)]
    return sum(1 for s in sizes if s <= maximum)


def _fraction(
    v: Version, mib: int, tp: int, chunk: int, graph: int, mla: bool, dp: int = 0, drafting: int = 0
) -> float:
    """The default mem_fraction_static of release `v` (server_args.py, era by era); `dp`: the
    --dp-size of data-parallel attention (0 without); `drafting`: MiB kept for a speculative draft
    from 0.4.7.post1 (sglang_speculative.speculative_reserve_mib)."""
    table = 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88
    if v < release_version("0.4.5.post3"):
        return table
    if v < release_version("0.4.6.post2"):
        return table if mib <= 81920 else (mib - 13 * 1024) / mib
    if v < release_version("0.4.7.post1"):
        if v >= release_version("0.4.7") and mib > 180000:
            return 0.79
        f = table if mib <= 81920 else 0.88
        if mib > 96 * 1024:
            f = min(f + 48 * 1024 * (1 - f) / mib, (mib - 18 * 1024) / mib)
        return f
    if v < release_version("0.5.3"):
        gib = mib / 1024
        reserve = (
            (2.8 + tp / 10) * 1024
            if gib < 35
            else (9.5 + tp / 2) * 1024
            if gib < 90
            else ((12 + tp / 2) * 1024 if gib < 160 else 32 * 1024)
        )
        return round((mib - reserve - drafting) / mib, 3)
    prefill = chunk if chunk > 0 else MAX_PREFILL_TOKENS  # -1: chunked prefill off
    reserved = 512 + max(prefill, 2048) * 1.5 + graph * 2 + tp / 8 * 1024
    if dp:  # --enable-dp-attention (sglang_dp)
        reserved += dp_graph_reserve_mib(graph, dp)
    if v >= release_version("0.5.10"):  # piecewise CUDA graphs on by default
        reserved += 8 * _pcg_sizes(2048 if mla else chunk) + (1536 if mla else 0)
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((mib - reserved - drafting) / mib, 3)


def sglang_defaults(
    gpu: GpuSpec,
    tp: int,
    version: Version | None = None,
    spec: ModelSpec | None = None,
    chunk: int | None = None,
    dp: int = 0,
    algorithm: str | None = None,
    enable_multimodal: bool = False,
) -> SglangDefaults:
    """The release's defaults on this GPU (a --chunked-prefill-size given enters the reserve, as do
    the --dp-size of data-parallel attention and a --speculative-algorithm; a model SGLang serves as
    multimodal, sglang_vlm.served_multimodal, lowers the fraction)."""
    v = version or SGLANG.newest
    default_chunk, graph = _chunk_and_graph(v, gpu.memory_mib / 1024, tp)
    chunk = chunk or default_chunk
    drafting = speculative_reserve_mib(algorithm, v)
    fraction = _fraction(v, gpu.memory_mib, tp, chunk, graph, bool(spec and spec.mla), dp, drafting)
    vlm = spec is not None and spec.vision is not None and served_multimodal(spec, enable_multimodal)
    if vlm and spec and spec.vision and v >= release_version(VLM_FRACTION_SINCE):
        fraction = vlm_fraction(fraction, spec.vision)
    return SglangDefaults(chunk, graph, round(fraction, 4))


def mem_fraction(gpu: GpuSpec, tp: int, work: Workload, spec: ModelSpec | None = None) -> float:
    if work.engine.mem_fraction_static:
        return work.engine.mem_fraction_static
    return workload_defaults(gpu, tp, work, spec).mem_fraction_static


def workload_defaults(gpu: GpuSpec, tp: int, work: Workload, spec: ModelSpec | None) -> SglangDefaults:
    """The release's defaults for this workload: its chunked prefill, DP attention and draft enter
    the reserve."""
    return sglang_defaults(
        gpu,
        tp,
        work.release.version,
        spec,
        work.engine.chunked_prefill_size,
        _dp_reserve(work),
        work.engine.speculative_algorithm,
        work.engine.enable_multimodal,
    )


def _dp_reserve(work: Workload) -> int:
    """The dp_size the default fraction reserves for (0 without data-parallel attention)."""
    return dp_size(work) if work.engine.enable_dp_attention else 0


def prefill_budget(gpu: GpuSpec, work: Workload) -> int:
    """Prompt tokens one prefill batch takes: the smaller of --chunked-prefill-size (the release's
    default by GPU memory) and max_prefill_tokens (schedule_policy.py PrefillAdder: rem_chunk_tokens,
    rem_input_tokens); -1 turns chunking off and leaves max_prefill_tokens."""
    version = work.release.version or SGLANG.newest
    chunk = work.engine.chunked_prefill_size or _chunk_and_graph(version, gpu.memory_mib / 1024, 1)[0]
    return min(chunk, MAX_PREFILL_TOKENS) if chunk > 0 else MAX_PREFILL_TOKENS


def default_running_requests(gpu: GpuSpec, work: Workload) -> int:
    """The cap on running requests when --max-running-requests is not given: vLLM's per-device
    scheduler default (1024 on large GPUs, 256 below), as gpusize has always applied it to SGLang.
    SGLang's own rule (its req_to_token pool size) is not modelled yet; this keeps the answers as
    they were. With an EAGLE-family or STANDALONE draft SGLang caps it at 48 (sglang_speculative)."""
    if caps_running_requests(work.engine.speculative_algorithm):
        return SPECULATIVE_RUNNING_REQUESTS
    return scheduler_limits(gpu, work).max_num_seqs
