"""LoRA serving memory: each term worked out by hand from the engines' tensor shapes.

vLLM (vllm/lora/layers/*.py create_lora_weights): per packed slice of a column-parallel layer
lora_a (max_loras, 1, rank, input) whole and lora_b (max_loras, 1, output/TP, rank); per row-parallel
layer lora_a (max_loras, 1, rank, input/TP) and lora_b (max_loras, 1, output, rank) whole; embed_tokens
lora_a (max_loras, vocab, rank) + lora_b (max_loras, 1, hidden, rank); lm_head lora_a
(max_loras, 1, rank, hidden) + lora_b (max_loras, 1, vocab, rank). SGLang (lora/mem_pool.py):
A (slots, rank x stacked, input[/TP row-parallel]) and B (slots, output[/TP otherwise], rank).

Llama-3.1-8B: hidden 4096, 32 heads, 8 KV heads, head_dim 128, intermediate 14336, vocab 128256,
32 layers, bf16.
"""

from __future__ import annotations

import json

import pytest

from gpusize.core.engines import engine
from gpusize.core.engines.sglang_lora import sglang_lora_host_bytes, sglang_lora_slot_bytes, sglang_lora_slots
from gpusize.core.engines.vllm import model_notes
from gpusize.core.engines.vllm.lora import lora_buffers, lora_host_bytes, lora_slot_bytes, lora_slots
from gpusize.core.engines.vllm.pipeline import evaluate_pipeline
from gpusize.core.lora import lora_modules
from gpusize.core.reserves import total_bytes
from gpusize.core.settings import launch_flag
from gpusize.errors import InputError
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, run_in_process, workload

H100 = find_gpu("H100")
RANK, SLOTS = 16, 4
LAYERS, HIDDEN, VOCAB = 32, 4096, 128256


def _vllm_layer_tp1() -> int:
    qkv = 3 * RANK * HIDDEN + (4096 + 1024 + 1024) * RANK  # three A slices, three B slices
    o = RANK * 4096 + HIDDEN * RANK
    gate_up = 2 * RANK * HIDDEN + (14336 + 14336) * RANK
    down = RANK * 14336 + HIDDEN * RANK
    return qkv + o + gate_up + down


def _vllm_layer_tp2() -> int:
    qkv = 3 * RANK * HIDDEN + (2048 + 512 + 512) * RANK  # B split, A whole
    o = RANK * 2048 + HIDDEN * RANK  # A split, B whole
    gate_up = 2 * RANK * HIDDEN + (7168 + 7168) * RANK
    down = RANK * 7168 + HIDDEN * RANK
    return qkv + o + gate_up + down


EMBED_AND_HEAD = (VOCAB * RANK + HIDDEN * RANK) + (RANK * HIDDEN + VOCAB * RANK)


def test_llama_modules_are_the_four_linear_ones_of_every_layer() -> None:
    modules, complete = lora_modules(catalog_spec("Llama-3.1-8B"))
    assert complete and len(modules) == 4 * LAYERS
    assert [m.name for m in modules[:4]] == ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]


@pytest.mark.parametrize(
    "tp, per_layer",
    [(1, _vllm_layer_tp1()), (2, _vllm_layer_tp2())],
)
def test_vllm_slots_llama_8b_rank_16_four_slots(tp: int, per_layer: int) -> None:
    expected = SLOTS * (LAYERS * per_layer + EMBED_AND_HEAD) * 2
    spec = catalog_spec("Llama-3.1-8B")
    assert lora_slot_bytes(spec, tp, SLOTS, RANK, 2.0) == expected
    work = workload(spec, 8192, enable_lora=True, max_loras=SLOTS)
    reserve = lora_slots(spec, H100, tp, work)
    assert reserve is not None and reserve.name == "lora_slots" and reserve.bytes == expected
    assert not reserve.estimate
    assert (tp, expected) in ((1, 369_426_432), (2, 260_374_528))


def test_vllm_column_parallel_b_and_row_parallel_a_shard_the_rest_is_whole() -> None:
    """TP 1 -> 2 removes exactly half of each column-parallel B and each row-parallel A."""
    spec = catalog_spec("Llama-3.1-8B")
    halved = ((4096 + 1024 + 1024) * RANK + 4096 * RANK + 28672 * RANK + 14336 * RANK) // 2
    saved = lora_slot_bytes(spec, 1, 1, RANK, 1.0) - lora_slot_bytes(spec, 2, 1, RANK, 1.0)
    assert saved == LAYERS * halved


def test_vllm_kv_slices_replicate_when_tp_exceeds_kv_heads() -> None:
    """At TP 16 each GPU holds one of the 8 KV heads' k and v (vLLM replicates them), not half of one."""
    spec = catalog_spec("Llama-3.1-8B")
    b_kv_16 = 2 * 1 * 128 * RANK
    qkv_16 = 3 * RANK * HIDDEN + (4096 // 16) * RANK + b_kv_16
    rest_16 = (
        (RANK * 256 + HIDDEN * RANK) + (2 * RANK * HIDDEN + 2 * 896 * RANK) + (RANK * 896 + HIDDEN * RANK)
    )
    assert lora_slot_bytes(spec, 16, 1, RANK, 1.0) == LAYERS * (qkv_16 + rest_16) + EMBED_AND_HEAD


def test_vllm_defaults_one_slot_rank_16_in_the_model_dtype() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    reserve = lora_slots(spec, H100, 1, workload(spec, 8192, enable_lora=True))
    assert reserve is not None and reserve.bytes == (LAYERS * _vllm_layer_tp1() + EMBED_AND_HEAD) * 2
    fp32 = lora_slots(spec, H100, 1, workload(spec, 8192, dtype="fp32", enable_lora=True))
    assert fp32 is not None and fp32.bytes == 2 * reserve.bytes
    half = lora_slots(
        spec, H100, 1, workload(spec, 8192, dtype="fp32", enable_lora=True, lora_dtype="float16")
    )
    assert half is not None and half.bytes == reserve.bytes


def test_vllm_buffers_are_punica_maps_and_the_shrink_buffer() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    reserve = lora_buffers(spec, H100, 1, workload(spec, 8192, enable_lora=True))
    assert reserve is not None and reserve.estimate
    assert reserve.bytes == 8192 * (3 * 8 + 3 * 4 + 3 * RANK * 4)  # H100: 8192 batched tokens


def test_vllm_host_ram_is_max_cpu_loras_whole_adapters_per_worker() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    work = workload(spec, 8192, enable_lora=True, max_loras=2, max_cpu_loras=6)
    whole = (LAYERS * _vllm_layer_tp1() + EMBED_AND_HEAD) * 2
    assert lora_host_bytes(spec, 2, work) == 2 * 6 * whole
    assert lora_host_bytes(spec, 1, workload(spec, 8192, enable_lora=True, max_loras=2)) == 2 * whole
    assert lora_host_bytes(spec, 1, workload(spec, 8192)) == 0


def test_without_enable_lora_there_is_no_reserve() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    assert lora_slots(spec, H100, 1, workload(spec, 8192)) is None
    assert lora_buffers(spec, H100, 1, workload(spec, 8192)) is None


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"max_loras": 4}, "--max-loras takes effect only with --enable-lora"),
        ({"enable_lora": True, "max_lora_rank": 20}, "invalid --max-lora-rank 20"),
        ({"enable_lora": True, "max_loras": 4, "max_cpu_loras": 2}, "must be >= --max-loras (4)"),
    ],
)
def test_vllm_refuses_what_vllm_refuses(settings: dict[str, object], message: str) -> None:
    spec = catalog_spec("Llama-3.1-8B")
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lora_slots(spec, H100, 1, workload(spec, 8192, **settings))


def test_the_pool_takes_the_slots_from_the_kv_cache() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    evaluate = engine("vllm").evaluate
    plain = evaluate(spec, H100, 1, workload(spec, 8192))
    lora = evaluate(spec, H100, 1, workload(spec, 8192, enable_lora=True, max_loras=SLOTS))
    assert lora.per_gpu is not None and plain.per_gpu is not None
    held = sum(r.bytes for r in lora.per_gpu.reserves)
    assert plain.kv_cache_capacity_tokens is not None and lora.kv_cache_capacity_tokens is not None
    per_token = 32 * 2 * 8 * 128 * 2
    lost = plain.kv_cache_capacity_tokens - lora.kv_cache_capacity_tokens
    assert abs(lost * per_token - held) <= 16 * per_token  # whole 16-token blocks
    assert lora.host_bytes == lora_host_bytes(
        spec, 1, workload(spec, 8192, enable_lora=True, max_loras=SLOTS)
    )


def _sglang_layer(tp: int) -> int:
    qkv = RANK * 3 * HIDDEN + (6144 // tp) * RANK
    o = RANK * (4096 // tp) + HIDDEN * RANK
    gate_up = RANK * 2 * HIDDEN + (28672 // tp) * RANK
    down = RANK * (14336 // tp) + HIDDEN * RANK
    return qkv + o + gate_up + down


@pytest.mark.parametrize("tp", [1, 2])
def test_sglang_pool_llama_8b_rank_16_default_eight_slots(tp: int) -> None:
    spec = catalog_spec("Llama-3.1-8B")
    expected = 8 * LAYERS * _sglang_layer(tp) * 2
    assert sglang_lora_slot_bytes(spec, tp, 8, RANK, 2.0) == expected
    work = workload(spec, 8192, engine_name="sglang", lora_paths="a=/ad/a b=/ad/b", max_lora_rank=RANK)
    reserve = sglang_lora_slots(spec, H100, tp, work)
    assert reserve is not None and reserve.bytes == expected and not reserve.estimate
    assert sglang_lora_host_bytes(spec, tp, work) == tp * 2 * LAYERS * _sglang_layer(1) * 2


def test_sglang_rank_unknown_is_an_estimate_at_rank_16() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    work = workload(spec, 8192, engine_name="sglang", lora_paths="/ad/a", max_loras_per_batch=2)
    reserve = sglang_lora_slots(spec, H100, 1, work)
    assert reserve is not None and reserve.estimate and "rank 16 assumed" in reserve.how
    assert reserve.bytes == 2 * LAYERS * _sglang_layer(1) * 2


def test_sglang_refuses_lora_settings_without_adapters_and_enable_lora_before_0_4_10() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    with pytest.raises(InputError, match="--max-loras-per-batch takes effect only"):
        sglang_lora_slots(spec, H100, 1, workload(spec, 8192, engine_name="sglang", max_loras_per_batch=2))
    old = workload(spec, 8192, engine_name="sglang", enable_lora=True, version="0.4.6.post2")
    with pytest.raises(InputError, match="has no --enable-lora"):
        sglang_lora_slots(spec, H100, 1, old)
    assert sglang_lora_slots(spec, H100, 1, workload(spec, 8192, engine_name="sglang")) is None


def _qwen3_30b_experts(tp: int, ep: bool) -> int:
    """Qwen3-30B-A3B: 48 MoE layers of 128 experts, hidden 2048, expert intermediate 768."""
    experts, width = (128 // tp, 768) if ep else (128, 768 // tp)
    per_expert = 2 * (RANK * 2048 + width * RANK) + RANK * width + 2048 * RANK
    return 48 * experts * per_expert


@pytest.mark.parametrize("tp, ep", [(1, False), (2, False), (2, True)])
def test_vllm_routed_experts_from_0_11_1(tp: int, ep: bool) -> None:
    spec = catalog_spec("Qwen3-30B-A3B")
    base = lora_slot_bytes(spec, tp, 1, RANK, 2.0)
    work = workload(spec, 8192, enable_lora=True, enable_expert_parallel=ep)
    reserve = lora_slots(spec, H100, tp, work)
    assert reserve is not None and not reserve.estimate and "every routed expert" in reserve.how
    assert reserve.bytes == base + _qwen3_30b_experts(tp, ep) * 2
    assert _qwen3_30b_experts(1, False) * 2 == 1_660_944_384  # 1.55 GiB per slot: more than the rest


def test_vllm_before_0_11_1_puts_no_lora_on_experts() -> None:
    spec = catalog_spec("Qwen3-30B-A3B")
    reserve = lora_slots(spec, H100, 1, workload(spec, 8192, enable_lora=True, version="0.11.0"))
    assert reserve is not None and "no LoRA on the routed experts" in reserve.how
    assert reserve.bytes == lora_slot_bytes(spec, 1, 1, RANK, 2.0)


def test_sglang_routed_experts_are_not_counted_and_the_answer_says_so() -> None:
    spec = catalog_spec("Qwen3-30B-A3B")
    work = workload(spec, 8192, engine_name="sglang", lora_paths="/ad/a", max_lora_rank=RANK)
    reserve = sglang_lora_slots(spec, H100, 1, work)
    assert reserve is not None and reserve.estimate and "routed experts" in reserve.how


def test_a_flag_newer_than_the_release_stays_off_its_launch_command() -> None:
    assert launch_flag("max_lora_rank", "sglang", "0.4.6.post2") is None
    assert launch_flag("max_lora_rank", "sglang", "0.5.3") == "--max-lora-rank"
    assert launch_flag("max_lora_rank", "vllm", "0.10.0") == "--max-lora-rank"


def test_cli_fit_takes_the_flags_and_names_the_reserves_in_json() -> None:
    r = run_in_process("fit", "Qwen3-8B", "--gpu", "H100", "--enable-lora", "--max-loras", "4", "--json")
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["workload"]["engine"]["max_loras"] == 4 and data["workload"]["engine"]["enable_lora"] is True
    names = [x["name"] for x in data["memory"]["reserves"]]
    assert names == ["lora_slots", "lora_buffers"]
    assert all(isinstance(x["bytes"], int) and x["bytes"] > 0 for x in data["memory"]["reserves"])


@pytest.mark.parametrize("command", ["fit", "serve", "quote", "curve", "which"])
def test_every_command_accepts_the_lora_flags(command: str) -> None:
    extra = {"serve": ["--users", "4"], "quote": ["--users", "4"], "which": []}.get(command, [])
    target = [] if command == "which" else ["Qwen3-8B"]
    args = [
        command,
        *target,
        *extra,
        "--gpu",
        "H100",
        "--enable-lora",
        "--max-loras",
        "2",
        "--max-lora-rank",
        "32",
    ]
    r = run_in_process(*args)
    assert "No such option" not in r.stderr and r.code in (0, 1), r.stderr


def test_cli_launch_commands_carry_the_flags() -> None:
    r = run_in_process(
        "serve", "Qwen3-8B", "--gpu", "H100", "--users", "4", "--enable-lora", "--max-loras", "4"
    )
    assert r.code == 0, r.stderr
    assert "--enable-lora" in r.stdout and "--max-loras 4" in r.stdout
    r = run_in_process(
        "serve", "Qwen3-8B", "--gpu", "H100", "--users", "4", "--engine", "sglang",
        "--lora-paths", "a=/ad/a b=/ad/b", "--max-lora-rank", "64",
    )  # fmt: skip
    assert r.code == 0, r.stderr
    assert "--lora-paths a=/ad/a b=/ad/b" in " ".join(r.stdout.replace("\\\n", " ").split())


def test_cli_bad_lora_input_is_one_line_exit_2() -> None:
    r = run_in_process("fit", "Qwen3-8B", "--gpu", "H100", "--max-loras", "4")
    assert r.code == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "--enable-lora" in r.stderr


@pytest.mark.parametrize("value", ["a=/x --tp-size", "a=/x\x1b[31m", "   "])
def test_cli_lora_paths_are_printable_words_none_an_option(value: str) -> None:
    """An adapter word that starts with "-" would become an option of the printed launch command."""
    r = run_in_process(
        "serve", "Qwen3-8B", "--gpu", "H100", "--users", "4", "--engine", "sglang", "--lora-paths", value
    )
    assert r.code == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "--lora-paths" in r.stderr and "\x1b" not in r.stderr


def test_vllm_note_names_the_cpu_cache_and_the_graphs() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    notes = model_notes(spec, workload(spec, 8192, enable_lora=True, max_loras=2, max_cpu_loras=8))
    assert any("up to 8 adapter(s) in pinned CPU memory" in n and "CUDA graphs" in n for n in notes)
    assert not any("--enable-lora" in n for n in model_notes(spec, workload(spec, 8192)))


def test_a_pipeline_over_servers_keeps_the_engine_s_reserves() -> None:
    """--nodes: each pipeline stage holds the LoRA slots vLLM reserves (cautious: whole on every stage),
    so the per-GPU total carries them and the pool shrinks by them (issue 20)."""
    spec = catalog_spec("Llama-3.1-70B")
    gpu = find_gpu("H100")
    plain = evaluate_pipeline(spec, gpu, 8, 2, workload(spec, 8192))
    lora = evaluate_pipeline(spec, gpu, 8, 2, workload(spec, 8192, enable_lora=True, max_lora_rank=64))
    assert plain.per_gpu is not None and lora.per_gpu is not None
    held = total_bytes(lora.per_gpu.reserves)
    assert held > 0
    assert lora.per_gpu.total_bytes - plain.per_gpu.total_bytes == held
    assert lora.kv_cache_capacity_tokens is not None and plain.kv_cache_capacity_tokens is not None
    assert lora.kv_cache_capacity_tokens < plain.kv_cache_capacity_tokens
