"""vLLM's --data-parallel-size on one server (core/engines/vllm/data_parallel.py): memory per GPU,
pools, launch and speed. Synthetic cases from vLLM's code (read in the 0.8.3, 0.10.2, 0.11.0 and
0.34.0 wheels with bench/release_sources.py): FusedMoEParallelConfig.make flattens tensor parallel
across the DP ranks for the routed experts ("MoE layers will be sharded according to the product of
the tensor-parallel-size and data-parallel-size", arg_utils.py), whole experts with
--enable-expert-parallel; models/deepseek_v2.py keeps attention, dense MLPs, the embedding and the LM
head on each rank's TP group; config/scheduler.py: "max_num_seqs, which applies per data-parallel
rank"; config/parallel.py use_sequence_parallel_moe (0.11.0+) puts the shared experts whole on every
GPU under expert parallel with TP > 1 and DP > 1. One published pair (gpustack's DeepSeek-V3.2 page)
checks the speed's direction."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.engines import engine
from gpusize.core.engines.vllm.data_parallel import attention_dp, weights_per_gpu
from gpusize.core.weights import routed_expert_bytes, weights_bytes
from gpusize.errors import InputError
from gpusize.serving.launch import vllm_command
from gpusize.serving.throughput import VLLM_DP_NOTE, decode_step, unmodelled
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, cli, workload
from tests.strategies import synthetic_configs

DSV3 = catalog_spec("DeepSeek-V3")
H200, H100 = find_gpu("H200"), find_gpu("H100")


def _vllm(spec=DSV3, batch: int = 1, **settings: object):  # type: ignore[no-untyped-def]
    return workload(spec, 8192, batch, engine_name="vllm", **settings)


def _evaluate(work, n: int = 8, spec=DSV3, gpu=H200):  # type: ignore[no-untyped-def]
    return engine("vllm").evaluate(spec, gpu, n, work)


def test_each_gpu_holds_the_rest_whole_at_its_ranks_tp_and_an_eighth_of_the_experts() -> None:
    """DP=8 x TP=1: every layer but the routed experts whole on every GPU (each rank's TP is 1), the
    256 routed experts over the 8 GPUs: 32 whole each with expert parallel, each sliced by 8 without
    (the same bytes: 8 divides 256). Exactly the model at TP=1 less 7/8 of its routed experts."""
    whole = weights_bytes(DSV3, _vllm().weights, 1)
    experts = routed_expert_bytes(DSV3, _vllm().weights, 1)
    for ep in (True, False):
        work = _vllm(data_parallel_size=8, enable_expert_parallel=ep)
        got = _evaluate(work).per_gpu
        assert got is not None
        assert got.weights_bytes == pytest.approx(whole - experts * 7 / 8, abs=2)
    tp8 = _evaluate(_vllm()).per_gpu
    assert tp8 is not None and got.weights_bytes > tp8.weights_bytes


def test_the_shared_experts_go_whole_under_sequence_parallel_moe_from_0_11() -> None:
    """DP=4 x TP=2 with expert parallel: 0.11.0's use_sequence_parallel_moe replicates the shared
    experts on every GPU (disable_tp); 0.10.2 (only with the DeepEP backends, not a default) keeps
    them sliced by the rank's TP. The difference is half the shared experts' bytes."""
    fmt = _vllm().weights
    old = weights_per_gpu(DSV3, _vllm(data_parallel_size=4, version="0.10.2"), 8, 4, True)
    new = weights_per_gpu(DSV3, _vllm(data_parallel_size=4, version="0.11.0"), 8, 4, True)
    shared = DSV3.params.shared_experts * fmt.role_bytes("shared_experts") * fmt.checkpoint_scale
    assert new - old == pytest.approx(shared / 2, abs=2)
    sliced = weights_per_gpu(DSV3, _vllm(data_parallel_size=4, version="0.11.0"), 8, 4, False)
    assert sliced == old  # without expert parallel the shared experts stay on the rank's TP


def test_every_rank_keeps_its_own_pool_for_its_own_requests() -> None:
    """An MLA latent is whole on every GPU of a TP group (vLLM replicates it over TP), so TP=8 holds
    one pool of every sequence on each GPU while DP=8 holds eight pools of their own sequences: the
    server's capacity is 8 ranks' pools, and 9 requests put 2 on the busiest rank (as 16 do)."""
    dp8 = _evaluate(_vllm(data_parallel_size=8, enable_expert_parallel=True))
    one_rank = _evaluate(_vllm(data_parallel_size=8, enable_expert_parallel=True), 8)
    tp8 = _evaluate(_vllm())
    assert dp8.kv_cache_capacity_tokens and tp8.kv_cache_capacity_tokens and one_rank.max_concurrency
    assert dp8.kv_cache_capacity_tokens % 8 == 0
    assert dp8.kv_cache_capacity_tokens > 4 * tp8.kv_cache_capacity_tokens
    nine = _evaluate(_vllm(batch=9, data_parallel_size=8, enable_expert_parallel=True)).per_gpu
    two = _evaluate(_vllm(batch=16, data_parallel_size=8, enable_expert_parallel=True)).per_gpu
    one = _evaluate(_vllm(batch=8, data_parallel_size=8, enable_expert_parallel=True)).per_gpu
    assert nine is not None and two is not None and one is not None
    assert nine.kv_cache_bytes == two.kv_cache_bytes == 2 * one.kv_cache_bytes


def test_a_dense_models_ranks_are_replicas() -> None:
    """Qwen3-8B, DP=4 on 4 GPUs: each GPU holds the whole model (TP=1 per rank)."""
    spec = catalog_spec("Qwen3-8B")
    got = _evaluate(_vllm(spec, data_parallel_size=4), 4, spec, H100).per_gpu
    one = _evaluate(_vllm(spec), 1, spec, H100).per_gpu
    assert got is not None and one is not None and got.weights_bytes == one.weights_bytes


def test_the_ranks_must_divide_the_gpus() -> None:
    got = _evaluate(_vllm(data_parallel_size=8), 4)
    assert not got.fits and got.reason and "multiple of 8 GPUs" in got.reason
    with pytest.raises(InputError, match="1, 2, 4 or 8 ranks"):
        _evaluate(_vllm(data_parallel_size=3))
    with pytest.raises(InputError, match="V1 engine only"):
        _evaluate(_vllm(data_parallel_size=2, vllm_use_v1=False, version="0.10.1"))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--gpus", "8", "--data-parallel-size", "8", "--enable-expert-parallel"), "-tp 1 -dp 8"),
        (("--gpus", "8", "--data-parallel-size", "4", "--enable-expert-parallel"), "-tp 2 -dp 4"),
    ],
)
def test_the_launch_command_gives_vllms_own_split(args: tuple[str, ...], words: str) -> None:
    """gpusize's --gpus counts the server's GPUs; the command prints each rank's TP beside the ranks."""
    got = cli("serve", "DeepSeek-V3", "--gpu", "H200", "--engine", "vllm", *args, "--users", "64", "--json")
    assert got.code == 0, got.stderr
    import json

    data = json.loads(got.stdout)
    command = data["launch"]["vllm"]["command"]
    tp, dp = re.findall(r"\d+", words)
    assert f"--tensor-parallel-size {tp} " in command and f"--data-parallel-size {dp}" in command
    assert f"--tensor-parallel-size {int(tp) * int(dp)} " not in command


def test_the_command_for_a_rank_of_two() -> None:
    work = _vllm(data_parallel_size=4, enable_expert_parallel=True)
    got = vllm_command("deepseek-ai/DeepSeek-V3", None, 8, work, 0.92, DSV3, H200).command
    assert got is not None and "--tensor-parallel-size 2 " in got and "--data-parallel-size 4" in got


@pytest.mark.parametrize(
    ("args", "message"),  # a rank count gpusize cannot lay out, a release before the flag, over servers
    [
        (("--data-parallel-size", "3", "--users", "8"), "1, 2, 4 or 8 ranks"),
        (("--data-parallel-size", "8", "--engine-version", "0.8.2", "--users", "8"), "--data-parallel-size"),
        (("--data-parallel-size", "8", "--nodes", "2", "--gpus", "8", "--users", "400"), "one server"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    got = cli("serve", "DeepSeek-R1", "--gpu", "H200", "--engine", "vllm", *args)
    assert got.code == 2 and len(got.stderr.strip().splitlines()) == 1 and message in got.stderr


def test_the_ranks_read_their_own_kv_and_the_weights_they_hold() -> None:
    """attention_dp: 8 ranks, each reading (beyond TP=8's slice) the 7/8 of the non-expert weights it
    holds whole, less the embedding (looked up, not read)."""
    work = _vllm(data_parallel_size=8, enable_expert_parallel=True)
    groups, extra = attention_dp(DSV3, work, 8)
    fmt = work.weights

    def held(n: int) -> float:
        embedding = DSV3.params.embedding * fmt.other_bytes * fmt.checkpoint_scale / n
        return weights_bytes(DSV3, fmt, n) - routed_expert_bytes(DSV3, fmt, n) - embedding

    assert groups == 8 and extra == pytest.approx(held(1) - held(8))
    one, many = decode_step(DSV3, work, H200, 8, 1, 4096), decode_step(DSV3, work, H200, 8, 512, 4096)
    plain1, plain_many = (
        decode_step(DSV3, _vllm(), H200, 8, 1, 4096),
        decode_step(DSV3, _vllm(), H200, 8, 512, 4096),
    )
    assert one and many and plain1 and plain_many
    assert one.step_s > plain1.step_s  # one sequence: the whole non-expert weights read on one GPU
    assert many.step_s < plain_many.step_s  # 512: each rank reads 64 sequences' latents, not 512


def test_the_note_states_the_measured_pair_and_the_models_ratio() -> None:
    """gpustack's DeepSeek-V3.2 page (vLLM 0.13.0, 8 x H200, ShareGPT burst of 1,000): -tp 8 2,702
    tok/s, -tp 1 -dp 8 --enable-expert-parallel 3,004 (1.11x; both known misses, the ShareGPT tail),
    the same TPOT both ways. With one API server for the 8 ranks (0.13.0's --api-server-count default
    1) the whole batch's host work stays in every step: estimated 1.05x (1.99x with it divided over
    the ranks). The note beside every answer with the setting gives both ratios, derived here from the
    records so that it cannot go stale."""
    from bench import calibrate_throughput as cal

    records = {r.id: r for r in cal.load_records()}
    dp = records["gs-vllm-deepseek-v32-h200-dp8-ep-sharegpt-burst"]
    tp = records["gs-vllm-deepseek-v32-h200-tp8-sharegpt-burst"]
    figure = "output_tokens_per_s"
    measured = dp.figures[figure] / tp.figures[figure]
    predicted = (cal.predict(dp, figure) or 0) / (cal.predict(tp, figure) or 1)
    assert f"{measured:.2f}x" in VLLM_DP_NOTE and f"{predicted:.2f}x" in VLLM_DP_NOTE
    assert predicted > 1 and abs(predicted - measured) < 0.1  # within 10 points of the pair
    work = _vllm(data_parallel_size=8, enable_expert_parallel=True)
    assert VLLM_DP_NOTE.format(dp=8) in unmodelled(work)
    assert not any("--data-parallel-size" in n for n in unmodelled(_vllm()))


@pytest.mark.parametrize(("version", "shared"), [("0.14.0", True), ("0.15.0", False)])
def test_one_api_server_pays_every_ranks_host_work_until_0_15(version: str, shared: bool) -> None:
    """entrypoints/openai/cli_args.py: --api-server-count default 1 through 0.14.0, None ("Defaults to
    data_parallel_size") from 0.15.0. 512 sequences over 8 ranks: the step pays 512 sequences' host
    work with one API server, the busiest rank's 64 with one per rank."""
    work = _vllm(data_parallel_size=8, enable_expert_parallel=True, version=version)
    plain = _vllm(version=version)
    got = engine("vllm").host_sequences(work, 512, 64)
    assert got == (512 if shared else 64)
    assert engine("vllm").host_sequences(plain, 512, 512) == 512  # no ranks: the batch is the group


def _vllm_dp_note(*args: str) -> str | None:
    import json

    got = cli(*args, "--json")
    assert got.code in (0, 1), got.stderr
    notes = json.loads(got.stdout)["assumptions"]["notes"]
    return next((n for n in notes if "with --data-parallel-size" in n), None)


def test_serve_and_quote_state_vllms_data_parallel_layout_for_mla_moe_models() -> None:
    """vLLM on DeepSeek-V3, sized without the setting: one note gives the recommended server with
    --data-parallel-size 8 --enable-expert-parallel, as `serve` sizes it when asked (capacity), and
    the measured pair and what its speed rests on; none when given, none for a dense model, none before
    the flag's release."""
    import json

    base = ("serve", "DeepSeek-V3", "--gpu", "H200", "--engine", "vllm", "--users", "64")
    note = _vllm_dp_note(*base)
    asked = json.loads(cli(*base, "--data-parallel-size", "8", "--enable-expert-parallel", "--json").stdout)
    assert note is not None and "no record checks the gain from 0.15.0" in note
    assert f"hold {asked['recommendation']['capacity_sequences']:,} sequences" in note
    assert _vllm_dp_note(*base, "--data-parallel-size", "8", "--enable-expert-parallel") is None
    assert _vllm_dp_note(*base, "--engine-version", "0.8.2") is None
    assert _vllm_dp_note("serve", "Qwen3-32B", "--gpu", "H100", "--engine", "vllm", "--users", "64") is None
    quoted = _vllm_dp_note("quote", "DeepSeek-V3", "--gpu", "H200", "--engine", "vllm", "--users", "200")
    assert quoted is not None and "server(s) hold the 200 users at once" in quoted


def test_the_headlines_name_vllms_own_split() -> None:
    """fit and serve name the ranks and each rank's TP, as the launch command prints them."""
    fit = cli("fit", "DeepSeek-V3", "--gpu", "H200", "--engine", "vllm", "--data-parallel-size", "8")
    serve = cli(
        "serve",
        "DeepSeek-V3",
        "--gpu",
        "H200",
        "--engine",
        "vllm",
        "--data-parallel-size",
        "4",
        "--users",
        "64",
    )
    assert fit.code == 0 and "8x NVIDIA H200 SXM 141GB (DP=8 x TP=1)" in fit.stdout
    assert serve.code == 0 and "1 replica(s) x DP=4 x TP=2" in serve.stdout.replace("\n  ", " ")


#: vllm-project/vllm#51454 (vLLM 0.25.0, DeepSeek-V4-Flash-0731 on 8 x B200; its start-up log's
#: non-default args: data_parallel_size 8, enable_expert_parallel, gpu_memory_utilization 0.95,
#: kv_cache_dtype fp8, max_num_batched_tokens 8192, max_num_seqs 256, block_size 256) and its recipe
#: issue vllm-project/recipes#762: "7.7x more total KV capacity (156.9x vs 20.43x max concurrency at
#: 1M context per startup log)" for --data-parallel-size 8 against TP8 + EP8.
V4_DP8_CONCURRENCY, V4_TP8_CONCURRENCY = 156.9, 20.43


def test_eight_pools_hold_what_the_published_start_up_logs_hold_against_tp8() -> None:
    """DeepSeek-V4-Flash's single latent KV head is whole on every GPU under TP8; under DP8 each GPU
    keeps its own pool, less the room the whole non-expert weights take: measured 7.68x the TP8
    concurrency at 1M tokens, each rank 0.96x of TP8's one pool. gpusize's ratio within 2%. The
    absolute concurrencies are not the test: the logs are of the -0731 checkpoint (not in the
    catalog) at --block-size 256, and gpusize's DeepSeek-V4 KV per token is an estimate."""
    spec = catalog_spec("DeepSeek-V4-Flash")
    b200 = find_gpu("B200")
    common = {
        "version": "0.25.0",
        "gpu_memory_utilization": 0.95,
        "max_num_seqs": 256,
        "max_num_batched_tokens": 8192,
        "enable_expert_parallel": True,
    }
    tp8 = workload(spec, 1 << 20, kv_dtype="fp8", engine_name="vllm", **common)
    dp8 = workload(spec, 1 << 20, kv_dtype="fp8", engine_name="vllm", data_parallel_size=8, **common)
    a, b = _evaluate(tp8, 8, spec, b200), _evaluate(dp8, 8, spec, b200)
    assert a.fits and b.fits and a.max_concurrency and b.max_concurrency
    measured = V4_DP8_CONCURRENCY / V4_TP8_CONCURRENCY
    assert b.max_concurrency / a.max_concurrency == pytest.approx(measured, rel=0.02)


@settings(max_examples=60, deadline=None)
@given(config=synthetic_configs(), dp=st.sampled_from((2, 4, 8)), ep=st.booleans())
def test_a_gpu_holds_between_tensor_parallel_over_all_and_over_its_rank(
    config: dict, dp: int, ep: bool
) -> None:
    """On any config: under --data-parallel-size a GPU holds at least what TP over the 8 GPUs gives it
    (everything but the routed experts is sliced over fewer GPUs) and, for a MoE model without expert
    parallel, no more than TP over its own rank (the routed experts spread over every GPU); a dense
    model's ranks hold exactly their rank's TP share."""
    from tests.strategies import spec_of

    spec = spec_of(config)
    n, tp = 8, 8 // dp
    work = workload(spec, 2048, engine_name="vllm", data_parallel_size=dp, enable_expert_parallel=ep)
    fmt = work.weights
    got = weights_per_gpu(spec, work, n, dp, ep)
    if spec.moe is None:
        assert got == weights_bytes(spec, fmt, tp)
        return
    assert got >= weights_bytes(spec, fmt, n) - 2
    if not ep:
        assert got <= weights_bytes(spec, fmt, tp) + 2


def test_layouts_and_options_carry_the_ranks() -> None:
    """serve's layouts and quote's options: `data_parallel` 8 on the 8-GPU layout, named
    "1 x DP=8 x TP=1"; the layouts it refuses (fewer GPUs than ranks) keep plain names and 1."""
    import json

    args = ("DeepSeek-V3", "--gpu", "H200", "--engine", "vllm", "--data-parallel-size", "8", "--users", "64")
    serve = json.loads(cli("serve", *args, "--json").stdout)
    by_tp = {x["tensor_parallel"]: x for x in serve["layouts"]}
    assert by_tp[8]["data_parallel"] == 8 and by_tp[8]["fits"]
    assert all(by_tp[n]["data_parallel"] == 1 and not by_tp[n]["fits"] for n in (1, 2, 4))
    quote = json.loads(cli("quote", *args, "--json").stdout)
    assert quote["recommendation"]["data_parallel"] == 8
    text = cli("serve", *args).stdout
    assert "1 x DP=8 x TP=1" in text and "8 x TP=1" in text
