"""The rules of core/plan.py, one case per rule, on synthetic configs built by the real parser.

Each case cites the upstream check it mirrors (vLLM 0.19 unless said). The catalog's models have
heads that all divide 8, so without these cases a deleted divisibility rule goes unnoticed.
"""

from __future__ import annotations

import pytest

from gpusize.core import plan
from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.parse import with_rope_scaling
from gpusize.core.plan import Candidate, split_problem
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.sources.catalog import find_gpu
from tests.helpers import workload
from tests.strategies import dense, hybrid_mamba, linear_attention, mla, moe, spec_of

# --------------------------------------------------------------------------- tensor-parallel splits


def test_attention_heads_must_divide_by_tp() -> None:
    """vllm/config/model.py ModelConfig.verify_with_parallel_config: 'Total number of attention heads
    (28) must be divisible by tensor parallel size (8)'. Qwen2.5-7B: 28 heads, 4 KV heads; the KV rule
    alone would accept TP=8 (8 % 4 == 0), so only the head rule refuses it."""
    spec = spec_of(dense(heads=28, kv_heads=4))
    assert split_problem(spec, 4, None) is None
    assert split_problem(spec, 8, None) == "TP=8 does not divide the 28 attention heads"
    assert "attention heads" in (split_problem(spec_of(dense(heads=12, kv_heads=12)), 8, None) or "")


def test_kv_heads_divide_tp_or_tp_divides_them() -> None:
    """vllm/model_executor/layers/linear.py QKVParallelLinear: divide(total_num_kv_heads, tp) when
    tp < kv heads, divide(tp, total_num_kv_heads) replicas otherwise; anything else is refused."""
    two = spec_of(dense(heads=8, kv_heads=2))
    assert split_problem(two, 2, None) is None
    assert split_problem(two, 4, None) is None  # each KV head on 2 ranks
    assert split_problem(two, 8, None) is None
    twelve = spec_of(dense(heads=12, kv_heads=3))
    assert split_problem(twelve, 2, None) == "TP=2 and the 3 KV heads do not divide one another"
    assert "KV heads" in (split_problem(spec_of(dense(heads=24, kv_heads=6)), 4, None) or "")


def test_mla_has_no_kv_head_rule() -> None:
    """MLA caches one latent per token on every rank (vllm/attention/layer.py MLAAttention): its
    num_key_value_heads is not split, so only the query heads must divide."""
    spec = spec_of(mla(heads=24, num_key_value_heads=3))
    assert spec.mla is not None and spec.num_key_value_heads == 3
    assert split_problem(spec, 2, None) is None
    assert split_problem(spec, 8, None) is None


def test_linear_attention_heads_must_divide_by_tp() -> None:
    """vllm/model_executor/models/qwen3_next.py Qwen3NextGatedDeltaNet: num_k_heads // tp_size and
    num_v_heads // tp_size (divide() asserts), both key and value heads."""
    assert split_problem(spec_of(linear_attention(key_heads=4, value_heads=8)), 4, None) is None
    keys = split_problem(spec_of(linear_attention(key_heads=2, value_heads=8)), 4, None)
    assert keys == "TP=4 does not divide the linear-attention heads"
    values = split_problem(spec_of(linear_attention(key_heads=2, value_heads=6)), 4, None)
    assert values == "TP=4 does not divide the linear-attention heads"


def test_mamba_heads_must_divide_by_tp() -> None:
    """vllm/model_executor/layers/mamba/mamba_mixer2.py MambaMixer2: 'Tensor parallel world size must
    divide num heads' (num_heads % tp_size == 0)."""
    assert split_problem(spec_of(hybrid_mamba(mamba_heads=8)), 4, None) is None
    assert split_problem(spec_of(hybrid_mamba(mamba_heads=6)), 4, None) == (
        "TP=4 does not divide the 6 Mamba heads"
    )


def test_expert_parallel_needs_an_expert_per_rank() -> None:
    """vllm/model_executor/layers/fused_moe/layer.py determine_expert_map: each of ep_size ranks
    gets global_num_experts // ep_size experts (+1 for the first remainder ranks); with more ranks
    than experts some hold none, which vLLM refuses. At tp = experts each rank holds one."""
    eight = spec_of(moe(experts=8))
    assert split_problem(eight, 8, None, expert_parallel=True) is None
    four = spec_of(moe(experts=4))
    assert split_problem(four, 8, None, expert_parallel=True) == (
        "expert parallel over 8 GPUs needs at least 8 experts; the model has 4"
    )
    assert split_problem(four, 8, None) is None  # without EP the experts are sliced, not dealt


def test_fp8_blocks_must_tile_each_ranks_expert_columns() -> None:
    """vllm/model_executor/layers/quantization/fp8.py Fp8MoEMethod.create_weights: the per-partition
    intermediate size must be a multiple of the weight block (block_k); with EP experts stay whole.
    1536 columns / 8 = 192, not a multiple of 128 (Qwen3-235B-A22B-FP8 at TP=8)."""
    spec = spec_of(moe(experts=8, width=1536))
    assert split_problem(spec, 4, (128, 128)) is None  # 384 = 3 x 128
    refusal = (
        split_problem(spec, 8, (128, 128), whole_experts="--enable-expert-parallel keeps experts whole") or ""
    )
    assert refusal.startswith("TP=8 leaves 192 expert columns per GPU") and "--enable-expert" in refusal
    assert split_problem(spec, 8, (128, 128), expert_parallel=True) is None
    assert split_problem(spec, 8, None) is None  # no blocks, no rule


def test_sglang_refuses_to_cut_the_fp8_blocks_of_its_experts_too() -> None:
    """sglang/srt/layers/quantization/fp8.py Fp8MoEMethod.create_weights (read in the 0.4.1, 0.4.3,
    0.4.6, 0.5.3 and 0.5.23 wheels): "The output_size of gate's and up's weight = {n} is not divisible
    by weight quantization block_n = {block_n}" for intermediate_size_per_partition % block_n. So
    Qwen3-235B-A22B-FP8 (1536 columns, 128-wide blocks) does not load at --tp-size 8 without expert
    parallel: the plan is refused there, with SGLang's own way out named, and takes TP=4."""
    from gpusize.core.engines import engine
    from gpusize.sources.catalog import find_gpu
    from tests.helpers import catalog_spec, workload

    spec = catalog_spec("Qwen3-235B-A22B-FP8")
    work = workload(spec, 8192, engine_name="sglang")
    h100 = find_gpu("H100")
    eight, four = (
        engine("sglang").evaluate(spec, h100, 8, work),
        engine("sglang").evaluate(spec, h100, 4, work),
    )
    assert not eight.fits and eight.reason and "192 expert columns" in eight.reason
    assert "--ep-size" in eight.reason and "--enable-expert-parallel" not in eight.reason
    assert four.reason is None or "expert columns" not in four.reason
    requantized = workload(spec, 8192, dtype="fp8", engine_name="sglang")  # weights quantized on load
    assert "expert columns" not in (engine("sglang").evaluate(spec, h100, 8, requantized).reason or "")


# --------------------------------------------------------------------------- context


def test_context_up_to_the_models_maximum() -> None:
    """vllm/config/model.py _get_and_verify_max_len: max_model_len above the derived maximum is an
    error; equal is allowed."""
    spec = spec_of(dense(max_position_embeddings=4096))
    assert plan.context_problem(spec, 4096) is None
    assert "exceeds the model's maximum of 4,096" in (plan.context_problem(spec, 4097) or "")


def test_yarn_flag_factor_and_original() -> None:
    """Qwen3 model cards: YaRN factor 4 over 32,768 positions for 131,072 tokens; the config's 40,960
    rounds down to the 32,768 pre-training positions. The factor is the smallest integer that covers
    the context, from 2 up to 64."""
    spec = spec_of(dense(max_position_embeddings=40960))
    assert plan.yarn_flag(spec, 131_072) == "--rope-scaling yarn:4:32768"
    assert plan.yarn_flag(spec, 131_073) == "--rope-scaling yarn:5:32768"
    assert plan.yarn_flag(spec, 32_768) is None  # factor 1: no scaling needed
    assert plan.yarn_flag(spec, 32_769) == "--rope-scaling yarn:2:32768"
    assert plan.yarn_flag(spec, 64 * 32_768) == "--rope-scaling yarn:64:32768"
    assert plan.yarn_flag(spec, 64 * 32_768 + 1) is None  # beyond the cap


def test_yarn_flag_only_for_unscaled_rope_models() -> None:
    scaled = with_rope_scaling(spec_of(dense(max_position_embeddings=32768)), "yarn", 4.0, 32768)
    assert plan.yarn_flag(scaled, 200_000) is None
    learned = spec_of(
        {
            "model_type": "gpt_bigcode",
            "n_embd": 256,
            "n_layer": 2,
            "n_head": 4,
            "vocab_size": 1000,
            "n_positions": 2048,
        }
    )
    assert learned.learned_position_embeddings and plan.yarn_flag(learned, 8192) is None


# --------------------------------------------------------------------------- picking


def _candidate(gpu: str, n: int, fits: bool, price: float | None) -> Candidate:
    return Candidate(gpu=gpu, gpu_full_name=gpu, num_gpus=n, tensor_parallel=n, fits=fits, usd_per_hour=price)


def test_ranked_fewest_gpus_then_cheapest_then_unpriced_then_name() -> None:
    two_cheap = _candidate("A", 2, True, 1.0)
    one_dear = _candidate("B", 1, True, 20.0)
    one_cheap = _candidate("C", 1, True, 5.0)
    one_unpriced = _candidate("D", 1, True, None)
    one_tie = _candidate("E", 1, True, 5.0)
    misfit = _candidate("F", 1, False, 0.5)
    best = [two_cheap, misfit, one_unpriced, one_dear, one_tie, one_cheap]
    assert [c.gpu for c in plan.ranked(best)] == ["C", "E", "B", "D", "A"]
    assert plan.recommend(best) is one_cheap
    assert plan.recommend([misfit]) is None and plan.ranked([misfit]) == []


def test_smallest_fit_stops_at_the_first_fit() -> None:
    asked: list[int] = []

    def evaluate(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> Candidate:
        asked.append(n)
        return _candidate(gpu.name, n, n >= 4, None)

    spec = spec_of(dense())
    out = plan.smallest_fit(spec, find_gpu("H100"), workload(spec, 1024), evaluate)
    assert asked == [1, 2, 4] and [c.fits for c in out] == [False, False, True]


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_refused_split_through_the_engine(tp: int) -> None:
    """The vLLM evaluator refuses what split_problem refuses, with no per-GPU figures."""
    spec = spec_of(dense(heads=28, kv_heads=4))
    candidate = engine("vllm").evaluate(spec, find_gpu("H100"), tp, workload(spec, 1024))
    assert candidate.fits == (tp in (1, 2, 4))
    if tp == 8:
        assert candidate.per_gpu is None and candidate.reason and "28 attention heads" in candidate.reason


def test_sglang_expert_parallel_keeps_the_fp8_block_experts_whole() -> None:
    """--expert-parallel-size 8 (SGLang's --ep-size, from 0.4.10.post2): the MoE layer deals 128 / 8
    whole experts a GPU (layers/moe/fused_moe_triton/layer.py: num_local_experts = num_experts //
    moe_ep_size, moe_tp_size = tp / ep), so Qwen3-235B-A22B-FP8 loads at TP=8; the bytes a GPU holds
    are the whole experts' share (no intermediate padding), the launch carries --ep-size 8; any other
    size than the TP size is refused, and so is the flag before its release."""
    from gpusize.core.engines import engine
    from gpusize.core.weights import weights_bytes
    from gpusize.errors import InputError
    from gpusize.serving.launch import sglang_command
    from gpusize.sources.catalog import find_gpu
    from tests.helpers import catalog_spec, workload

    spec = catalog_spec("Qwen3-235B-A22B-FP8")
    h100 = find_gpu("H100")
    work = workload(spec, 8192, engine_name="sglang", expert_parallel_size=8)
    got = engine("sglang").evaluate(spec, h100, 8, work)
    assert got.fits and got.per_gpu is not None
    assert got.per_gpu.weights_bytes == weights_bytes(spec, work.weights, 8, False, True)
    assert "ep_size" in engine("sglang").effective_settings(spec, h100, 8, work)
    command = sglang_command("Qwen/Qwen3-235B-A22B-FP8", None, 8, work, 0.8, spec, h100).command or ""
    assert "--tp-size 8 " in command and command.endswith("--ep-size 8")
    four = engine("sglang").evaluate(spec, h100, 4, work)
    assert not four.fits and "equal to the TP size" in (four.reason or "")
    with pytest.raises(InputError, match="--expert-parallel-size"):
        engine("sglang").evaluate(
            spec,
            h100,
            8,
            workload(spec, 8192, engine_name="sglang", expert_parallel_size=8, version="0.4.9.post3"),
        )
