"""vLLM data parallel on one server (`--data-parallel-size D --tensor-parallel-size T`), pure.

gpusize counts the server's GPUs (`--gpus`, the plan's size n = D x T, as SGLang's --tp-size counts
them under DP attention); the launch command prints vLLM's own split (T = n / D). The layout:
- D engine ranks of T GPUs each, every rank with its own scheduler (max_num_seqs and
  max_num_batched_tokens per rank) and its own KV cache, sized by its own memory profile at the
  same gpu_memory_utilization: a request's KV lives on one rank (an MLA latent whole on each of its T
  GPUs), so the server holds D pools;
- attention, dense MLPs, shared experts, the embedding and the LM head per rank at T, replicated
  across the ranks (models/deepseek_v2.py, vocab_parallel_embedding.py: the TP group only); from
  0.11.0, with expert parallel, T > 1 and D > 1, the shared experts whole on every GPU
  (ParallelConfig.use_sequence_parallel_moe: `disable_tp=is_sequence_parallel`, "the weights are
  replicated and no collective ops are needed"; `SEQUENCE_PARALLEL_MOE_SINCE`);
- a MoE model's routed experts over all n GPUs: whole experts with --enable-expert-parallel, else
  sliced as tensor parallel over the n ranks (FusedMoEParallelConfig flattens TP across DP);
- a dense model's ranks are whole replicas.
V1 only (no data-parallel client in V0). Read in the 0.8.3, 0.10.2, 0.11.0 and 0.34.0 wheels
(bench/release_sources.py): FusedMoEParallelConfig.make, `flatten_tp_across_dp`; each rank's
scheduler limits and memory profile its own (config/scheduler.py: "max_num_seqs, which applies per
data-parallel rank"). The default all-to-all backends (naive, allgather_reducescatter) keep no
persistent buffer; DeepEP's (not a default) would add 1 GiB a GPU, not modelled.
"""

from __future__ import annotations

from gpusize.core.plan import TP_SIZES
from gpusize.core.releases import VLLM, parse_version
from gpusize.core.settings.vllm import VLLM_DATA_PARALLEL
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import data_parallel_weights_bytes, routed_expert_bytes, weights_bytes
from gpusize.core.workload import Workload
from gpusize.dataclass import replace
from gpusize.errors import InputError

__all__ = [
    "API_SERVER_PER_RANK_SINCE",
    "SEQUENCE_PARALLEL_MOE_SINCE",
    "attention_dp",
    "dp_problem",
    "dp_size",
    "host_sequences",
    "launch_tp",
    "rank_tp",
    "rank_work",
    "weights_per_gpu",
    "with_data_parallel",
]


#: The first release whose shared experts go whole on every GPU under expert parallel with TP > 1 and
#: DP > 1 (0.11.0 config/parallel.py `use_sequence_parallel_moe`, the default all-to-all backend
#: among those it names; 0.10.2 only with the DeepEP backends, not a default).
SEQUENCE_PARALLEL_MOE_SINCE = "0.11.0"


def dp_size(work: Workload) -> int:
    """The data-parallel ranks (1 without --data-parallel-size)."""
    dp = work.engine.data_parallel_size or 1
    if max(TP_SIZES) % dp:
        raise InputError(
            f"invalid --data-parallel-size {dp}: gpusize lays out 1, 2, 4 or 8 ranks on a server"
        )
    if dp > 1 and work.engine.vllm_use_v1 is False:
        raise InputError("--data-parallel-size runs on vLLM's V1 engine only: drop --no-vllm-use-v1")
    return dp


def _shared_whole(spec: ModelSpec, work: Workload, tp: int, dp: int, expert_parallel: bool) -> bool:
    """The shared experts whole on every GPU (`SEQUENCE_PARALLEL_MOE_SINCE`)."""
    since = parse_version(SEQUENCE_PARALLEL_MOE_SINCE)
    assert since is not None
    moe = spec.moe is not None and expert_parallel
    return moe and tp > 1 and dp > 1 and work.release.version >= since


def dp_problem(n: int, dp: int) -> str | None:
    """Why a plan of `n` GPUs cannot run `dp` ranks of equal tensor parallel size, or None."""
    if n % dp:
        return (
            f"--data-parallel-size {dp} needs a multiple of {dp} GPUs, not {n} (gpusize's --gpus counts "
            "the server's GPUs: vLLM's --tensor-parallel-size x --data-parallel-size)"
        )
    return None


def rank_tp(n: int, dp: int) -> int:
    """vLLM's --tensor-parallel-size of each rank in a plan of `n` GPUs."""
    return max(n // dp, 1)


def rank_work(work: Workload, dp: int) -> Workload:
    """One rank's share of the requests: the busiest rank holds ceil(batch / dp) of them."""
    if dp <= 1:
        return work
    return replace(work, batch=-(-work.batch // dp))


def weights_per_gpu(spec: ModelSpec, work: Workload, n: int, dp: int, expert_parallel: bool) -> int:
    """Weight bytes one GPU holds: everything per rank at n / dp, the routed experts over all n."""
    tp, fmt = rank_tp(n, dp), work.weights
    held = data_parallel_weights_bytes(spec, fmt, tp, n, work.include_mtp, expert_parallel)
    if _shared_whole(spec, work, tp, dp, expert_parallel):  # the rest of each shared expert
        shared = spec.params.shared_experts * fmt.role_bytes("shared_experts") * fmt.checkpoint_scale
        held += int(shared * (1 - 1 / tp))
    return held


def attention_dp(spec: ModelSpec, work: Workload, n: int) -> tuple[int, float]:
    """(ranks, weight bytes per GPU a decode step reads beyond tensor parallel over n) in a plan of `n`
    GPUs: each rank reads the weights it holds at n / dp (all but the routed experts; the embedding
    is looked up, not read) where tensor parallel over n would read 1 / n of them; (1, 0.0) without
    data parallel. A dense model's ranks are replicas: the same rule (everything at n / dp)."""
    dp = dp_size(work)
    if dp <= 1 or dp_problem(n, dp) is not None:
        return 1, 0.0
    tp = rank_tp(n, dp)
    fmt = work.weights

    def held(size: int) -> float:  # what a GPU reads of all but the routed experts at TP `size`
        embedding = spec.params.embedding * fmt.other_bytes * fmt.checkpoint_scale / size
        return weights_bytes(spec, fmt, size) - routed_expert_bytes(spec, fmt, size) - embedding

    # the routed experts are read as tensor parallel over n reads them, whole or sliced
    # (`throughput.unmodelled`: expert parallel's step is priced as tensor parallel's)
    return dp, max(held(tp) - held(n), 0.0)


def with_data_parallel(work: Workload, n: int) -> tuple[Workload, str] | None:
    """The workload with --data-parallel-size n --enable-expert-parallel (vLLM's recipe for DeepSeek on
    one server: each GPU a rank of its own, the experts whole over all), and those flags; None where
    the user set it already, the plan has one GPU, the release predates the flag or runs V0."""
    since = parse_version(VLLM_DATA_PARALLEL)
    assert since is not None
    given = work.engine.data_parallel_size is not None or work.engine.vllm_use_v1 is False
    if given or n < 2 or work.release.version < since:
        return None
    engine = replace(work.engine, data_parallel_size=n, enable_expert_parallel=True)
    return replace(work, engine=engine), f"--data-parallel-size {n} --enable-expert-parallel (-tp 1)"


#: vLLM's API server processes under --data-parallel-size: one for every rank up to 0.14.x
#: (entrypoints/openai/cli_args.py `--api-server-count ... default=1`, read in the 0.13.0 and 0.14.0
#: wheels), data_parallel_size of them from 0.15.0 ("Defaults to data_parallel_size if not
#: specified"; entrypoints/cli/serve.py sets it from the ranks with the internal load balancer).
API_SERVER_PER_RANK_SINCE = "0.15.0"


def host_sequences(work: Workload, sequences: int, local: int) -> int:
    """Sequences whose per-sequence host work one decode step waits on: every one of them where one API
    server process detokenizes and streams every rank's outputs (before API_SERVER_PER_RANK_SINCE),
    the busiest rank's (`local`) where each rank has its own. The whole host term is put on the
    shared process, the cautious side: each rank's engine core still schedules its own. The release
    is the one the plan names (`work.engine.version`), as `async_scheduling` reads it."""
    if dp_size(work) <= 1:
        return local
    version = parse_version(work.engine.version) if work.engine.version else VLLM.default_version
    since = parse_version(API_SERVER_PER_RANK_SINCE)
    assert since is not None
    return local if version is not None and version >= since else sequences


def launch_tp(work: Workload, n: int) -> int:
    """vLLM's --tensor-parallel-size for a plan of `n` GPUs: each rank's where the ranks divide the
    GPUs; n where they do not (a plan `dp_problem` refuses, named as plain tensor parallel)."""
    dp = dp_size(work)
    return n if n % dp else rank_tp(n, dp)
