"""SGLang data-parallel attention (`--enable-dp-attention --dp-size N`), pure.

Layout (sgl-project/sglang python/sglang/srt/layers/dp_attention.py `compute_dp_attention_world_info`:
attn_tp_size = tp_size // dp_size): the tp GPUs form dp_size groups of attn_tp = tp / dp GPUs.
- Attention weights are sharded over the attn_tp GPUs of a group and replicated across the groups
  (models/deepseek_v2.py: q_b_proj, kv_b_proj and o_proj take tp_rank / tp_size from
  get_attention_tp_rank / get_attention_tp_size); the MLA down-projections stay replicated.
- The input embedding is not sharded at all (VocabParallelEmbedding(..., enable_tp=not
  is_dp_attention_enabled())); the LM head stays sharded over all tp (enable_dp_lm_head off).
- MoE and dense MLP layers stay tensor (or expert) parallel over all tp GPUs (moe_dense_tp_size unset).
- Each group runs its own scheduler and KV pool for its own requests: a token's cache lives on the
  attn_tp GPUs of one group (an MLA latent whole on each of them), so the instance holds dp pools.
- The default mem_fraction_static reserves cuda_graph_max_bs x dp_size x 3 MiB more ("DP attention
  needs more padding for some operations"), and x 1.5 MiB more again above 300 graph batch sizes
  (server_args.py `_handle_gpu_memory_settings`, read in the newest server_args; gpusize applies it
  to the 0.5.3+ formula it belongs to and does not model DP attention in older releases).
"""

from __future__ import annotations

from gpusize.core.plan import TP_SIZES
from gpusize.core.releases import Version, parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import WeightFormat
from gpusize.core.workload import Workload
from gpusize.dataclass import replace
from gpusize.errors import InputError

__all__ = [
    "DP_ATTENTION_SINCE",
    "attention_extra_bytes",
    "attention_dp",
    "attention_tp",
    "dp_graph_reserve_mib",
    "dp_problem",
    "dp_size",
    "dp_weight_extra_bytes",
    "with_dp_attention",
]

#: The first release whose mem_fraction_static formula (the one with the DP attention term) gpusize
#: models; DP attention in older releases is refused rather than guessed.
DP_ATTENTION_SINCE = "0.5.3"


def dp_size(work: Workload) -> int:
    """The attention data-parallel size (1 without --enable-dp-attention). Raises InputError for a
    --dp-size without --enable-dp-attention (that runs whole replicas: `serve` lays those out), a size
    that divides no tensor-parallel size, or a release before DP_ATTENTION_SINCE."""
    s = work.engine
    if not s.enable_dp_attention:
        if s.dp_size is not None:
            raise InputError(
                "--dp-size without --enable-dp-attention runs whole replicas; compare those with 'serve'"
            )
        return 1
    dp = s.dp_size or 1
    if max(TP_SIZES) % dp:
        raise InputError(f"invalid --dp-size {dp}: must divide the tensor-parallel size (1, 2, 4 or 8)")
    since = parse_version(DP_ATTENTION_SINCE)
    assert since is not None
    version: Version = work.release.version
    if version < since:
        raise InputError(f"--enable-dp-attention is modelled from SGLang {DP_ATTENTION_SINCE}, not {version}")
    return dp


def dp_problem(tp: int, dp: int) -> str | None:
    """SGLang's own check (server_args.py: assert tp_size % dp_size == 0) for a plan of `tp` GPUs."""
    if tp % dp:
        return f"SGLang refuses --dp-size {dp} on {tp} GPU(s): tp_size must be divisible by dp_size"
    return None


def attention_dp(spec: ModelSpec, work: Workload, tp: int) -> tuple[int, float]:
    """(groups, weight bytes per GPU a decode step reads beyond tensor parallel's) in a plan of `tp`
    GPUs: dp_size groups where SGLang takes it on tp GPUs (`dp_problem`), each reading the sharded
    attention projections at 1 / attn_tp (`attention_extra_bytes`); else (1, 0.0)."""
    dp = dp_size(work)
    if dp <= 1 or dp_problem(tp, dp) is not None:
        return 1, 0.0
    return dp, attention_extra_bytes(spec, work.weights, tp, dp)


def with_dp_attention(work: Workload, tp: int) -> tuple[Workload, str] | None:
    """The workload with --enable-dp-attention --dp-size tp, and those flags; None where the user set
    it already, the plan has one GPU, or the release predates DP_ATTENTION_SINCE."""
    since = parse_version(DP_ATTENTION_SINCE)
    assert since is not None
    if work.engine.enable_dp_attention or tp < 2 or work.release.version < since:
        return None
    engine = replace(work.engine, enable_dp_attention=True, dp_size=tp)
    return replace(work, engine=engine), f"--enable-dp-attention --dp-size {tp}"


def attention_tp(tp: int, dp: int) -> int:
    """GPUs one attention group spans: attn_tp_size = tp_size // dp_size."""
    return max(tp // dp, 1)


def dp_weight_extra_bytes(spec: ModelSpec, fmt: WeightFormat, tp: int, dp: int) -> int:
    """Bytes per GPU DP attention adds to the tensor-parallel weights (`weights_bytes` at tp): the
    sharded attention projections at 1 / attn_tp instead of 1 / tp, and the whole input embedding
    instead of 1 / tp of it."""
    if dp <= 1:
        return 0
    embedding = spec.params.embedding * fmt.other_bytes * (1 - 1 / tp)
    return int(attention_extra_bytes(spec, fmt, tp, dp) + embedding * fmt.checkpoint_scale)


def attention_extra_bytes(spec: ModelSpec, fmt: WeightFormat, tp: int, dp: int) -> float:
    """Bytes per GPU of the sharded attention projections beyond their 1 / tp slice: each group holds
    them at 1 / attn_tp (what a decode step reads more under DP attention; the embedding the memory
    adds is looked up, not read)."""
    if dp <= 1:
        return 0.0
    counts = spec.params
    attention_bytes = fmt.other_bytes if "attention" in fmt.unquantized else fmt.linear_bytes
    sharded = (counts.attention - counts.replicated_attention) * attention_bytes
    return sharded * (1 / attention_tp(tp, dp) - 1 / tp) * fmt.checkpoint_scale


def dp_graph_reserve_mib(graph_max_bs: int, dp: int) -> float:
    """MiB the default mem_fraction_static reserves for DP attention: graph x dp x 3, and graph x dp
    x 1.5 more when the graph batch sizes exceed 300."""
    extra = graph_max_bs * dp * 3.0
    if graph_max_bs > 300:
        extra += graph_max_bs * dp * 1.5
    return extra
