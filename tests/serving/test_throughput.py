"""The throughput model's parts: what a decode step reads, MoE experts, tensor-parallel links,
llama.cpp's splits and CPU offload, load, ranges, and invariants (hypothesis)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.engines import engine
from gpusize.core.weights import rope_cache_bytes, weights_bytes
from gpusize.core.workload import EngineSettings, Request, StoredLayers, resolve
from gpusize.serving import calibrated, load, throughput
from gpusize.sources.catalog import find_gpu
from gpusize.sources.gguf import read_gguf
from tests.gguf_files import llama31_8b_q4_k_m
from tests.helpers import catalog_spec, workload

ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
H100, RTX4090 = find_gpu("H100"), find_gpu("RTX4090")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpusize", *args], capture_output=True, text=True, env=ENV, timeout=60
    )


def test_experts_touched_matches_the_measured_111_of_128() -> None:
    """InferenceX PR #1061: "At batch=64, nearly all 111/128 unique experts are loaded per decode step"
    for gpt-oss-120b (top-4 of 128): 1 - (1 - 4/128)^64 = 0.869."""
    spec = catalog_spec("gpt-oss-120b")
    assert round(throughput.experts_touched(spec, 64) * 128, 1) == 111.2
    assert throughput.experts_touched(spec, 1) == 4 / 128
    assert throughput.experts_touched(catalog_spec("Qwen3-8B"), 7) == 1.0


def test_decode_reads_no_vision_tower_no_input_table() -> None:
    """gemma-3-4b-it: a decode step reads the text weights only (the issue: -27% -> +12% once the
    SigLIP tower is left out); the untied input embedding is looked up, one row per token."""
    spec = catalog_spec("gemma-3-4b-it")
    work = workload(spec, 4096)
    fmt, counts = work.weights, spec.params
    stored = weights_bytes(spec, fmt) - rope_cache_bytes(spec, fmt)
    read = throughput.decode_weight_bytes(spec, work, 1, 1)
    assert counts.vision > 0
    assert read == stored - (counts.vision + counts.lookup_only) * fmt.other_bytes


def test_decode_reads_mtp_layers_only_with_mtp() -> None:
    """DeepSeek-V3 stores an MTP layer that only speculative decoding loads: not read per step."""
    spec = catalog_spec("DeepSeek-V3")
    work = workload(spec, 4096)
    every_expert = throughput.decode_weight_bytes(spec, work, 8, 10**6)
    assert spec.params.mtp > 0
    assert every_expert < weights_bytes(spec, work.weights, 8, include_mtp=True)
    table = spec.params.lookup_only * work.weights.other_bytes / 8
    assert every_expert == weights_bytes(spec, work.weights, 8) - rope_cache_bytes(spec, work.weights) - table


def test_moe_reads_only_the_experts_the_batch_touches() -> None:
    spec = catalog_spec("gpt-oss-120b")
    work = workload(spec, 4096)
    one, sixty_four = (throughput.decode_weight_bytes(spec, work, 1, n) for n in (1, 64))
    expert_bytes = spec.params.experts * work.weights.linear_bytes
    assert one < sixty_four < one + expert_bytes
    assert sixty_four - one == expert_bytes * (throughput.experts_touched(spec, 64) - 4 / 128)


def test_gguf_decode_reads_stored_tensors_less_the_input_embedding(tmp_path: Path) -> None:
    """A Q4_K_M GGUF: every block and the Q6_K output head at their stored size; the Q4_K input
    embedding is not read (the old model subtracted it at 2 bytes per value: 16% too few bytes). On an
    RTX 4090 the estimate is the 130.58 tok/s llama-bench measured (XiongjieDai, Llama-3-8B Q4_K_M
    tg512, the same tensor layout), within 5%."""
    path = tmp_path / "llama31-8b-q4_k_m.gguf"
    llama31_8b_q4_k_m(path)
    model = read_gguf(path)
    spec = catalog_spec("Llama-3.1-8B")
    stored = StoredLayers(model.layer_bytes, model.token_embd_bytes, model.output_bytes)
    request = Request(
        context_tokens=4096,
        engine=EngineSettings(name="llamacpp"),
        stored_layers=stored,
        checkpoint_bytes=model.tensor_bytes,
    )
    work = resolve(spec, request, engine("llamacpp").settings, engine("llamacpp").releases)
    assert throughput.decode_weight_bytes(spec, work, 1, 1) == sum(model.layer_bytes) + model.output_bytes
    speed = throughput.decode_step(spec, work, RTX4090, 1, 1, 256)
    assert speed is not None and abs(speed.per_sequence_tokens_per_s / 130.58 - 1) < 0.05


def test_links() -> None:
    """NVSwitch boards and Infinity Fabric are NVLink; GeForce and the PCIe Ada cards have no
    peer-to-peer (through host memory); NVLink bridges join pairs only."""
    assert throughput.link(H100)[0] == "nvlink"
    assert throughput.link(find_gpu("MI300X"))[0] == "nvlink"
    assert throughput.link(RTX4090)[0] == "pcie-host"
    assert throughput.link(find_gpu("L40S"))[0] == "pcie-host"
    assert throughput.link(find_gpu("A10"))[0] == "pcie"
    a100_pcie = find_gpu("A100-80GB-PCIe")
    assert throughput.allreduce_s(a100_pcie, 4, 0) > throughput.allreduce_s(a100_pcie, 2, 0)
    assert throughput.allreduce_s(H100, 1, 10**6) == 0


def test_memory_classes_and_uncalibrated_fallback() -> None:
    assert throughput.memory_class(H100) == "hbm3"
    assert throughput.memory_class(find_gpu("A100-80GB")) == "hbm2"
    assert throughput.memory_class(RTX4090) == "gddr"
    vllm = calibrated.engine_speed("vllm")
    assert not vllm.calibrated_for("gddr")
    assert vllm.efficiency("gddr") == min(vllm.bandwidth_efficiency.values())  # conservative


def test_llamacpp_layer_split_is_a_pipeline_row_split_reads_in_parallel() -> None:
    """-sm layer: one stream gets no faster with more GPUs (measured 130.58 -> 118.09 tok/s from 1 to 8
    RTX 4090s); -sm row: every GPU reads its share of each matrix at once, but the gather on the main
    GPU grows with the GPUs (measured 10.46 / 11.07 / 9.37 tok/s on 2 / 4 / 8 A100s, 70B fp16)."""
    spec = catalog_spec("Llama-3.1-70B")
    work = workload(spec, 4096, dtype="int4", engine_name="llamacpp")
    layer = [
        throughput.decode_step(spec, work, RTX4090, 1, 1, 512, throughput.LlamaCppPlacement(n))
        for n in (2, 4, 8)
    ]
    speeds = [s.per_sequence_tokens_per_s for s in layer if s]
    assert speeds == sorted(speeds, reverse=True) and speeds[0] / speeds[-1] < 1.1
    row2, row8 = (
        throughput.decode_step(spec, work, RTX4090, 1, 1, 512, throughput.LlamaCppPlacement(n, "row"))
        for n in (2, 8)
    )
    assert row2 and row8 and row8.per_sequence_tokens_per_s < 1.2 * row2.per_sequence_tokens_per_s
    assert row2.comm_s == calibrated.ROW_SPLIT_SYNC_S * len(spec.layers) * 2


def test_llamacpp_offload_reads_host_layers_at_host_bandwidth() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    speeds = []
    for ngl in (33, 20, 0):
        work = workload(spec, 4096, engine_name="llamacpp", n_gpu_layers=ngl)
        step = throughput.decode_step(spec, work, RTX4090, 1, 1, 512)
        assert step is not None
        speeds.append(step.per_sequence_tokens_per_s)
    assert speeds == sorted(speeds, reverse=True) and speeds[0] > 4 * speeds[-1]
    work = workload(spec, 4096, engine_name="llamacpp", n_gpu_layers=20)
    slow, fast = (
        throughput.decode_step(spec, work, RTX4090, 1, 1, 512, throughput.LlamaCppPlacement(host_gbps=g))
        for g in (40.0, 200.0)
    )
    assert slow and fast and fast.per_sequence_tokens_per_s > slow.per_sequence_tokens_per_s


def test_steady_load_and_ttft() -> None:
    """More users: each stream slows, the total grows; users beyond capacity queue for a slot."""
    spec = catalog_spec("Qwen3-8B")
    work = workload(spec, 8192)
    points = [load.steady(spec, work, H100, 1, n, 1024, 256, 64) for n in (1, 8, 64)]
    assert all(points)
    per = [p.per_request_tokens_per_s for p in points if p]
    agg = [p.aggregate_tokens_per_s for p in points if p]
    assert per == sorted(per, reverse=True) and agg == sorted(agg)
    within, queued = (
        load.steady(spec, work, H100, 1, 64, 1024, 256, 64),
        load.steady(spec, work, H100, 1, 128, 1024, 256, 64),
    )
    assert within and queued and queued.ttft_s and within.ttft_s and queued.ttft_s > 2 * within.ttft_s
    assert abs(queued.aggregate_tokens_per_s - within.aggregate_tokens_per_s) < 1e-6


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["Qwen3-8B", "gpt-oss-20b", "Llama-3.1-70B", "gemma-3-4b-it"]),
    st.sampled_from([1, 2, 4, 8]),
    st.integers(1, 256),
    st.integers(1, 32768),
)
def test_step_grows_with_batch_and_context(name: str, tp: int, seqs: int, ctx: int) -> None:
    """A step never gets shorter with more sequences or a longer context; the total never drops (where
    vLLM's async scheduling leaves the step to the per-sequence host work, the total is flat at
    1 / sequence_s: equal up to rounding)."""
    spec = catalog_spec(name)
    work = workload(spec, 32768)
    base = throughput.decode_step(spec, work, H100, tp, seqs, ctx)
    more = throughput.decode_step(spec, work, H100, tp, seqs + 1, ctx)
    longer = throughput.decode_step(spec, work, H100, tp, seqs, ctx + 1024)
    assert base and more and longer
    assert more.step_s >= base.step_s and longer.step_s >= base.step_s
    assert more.aggregate_tokens_per_s >= base.aggregate_tokens_per_s * (1 - 1e-12)
    short, long_ = (throughput.prefill_seconds(spec, work, H100, tp, p) for p in (ctx, ctx + 512))
    assert short is not None and long_ is not None and long_ > short


def test_serve_json_carries_ranges() -> None:
    data = json.loads(
        run("serve", "Qwen3-8B", "--users", "16", "--gpu", "H100", "--gpus", "2", "--json").stdout
    )
    for x in data["layouts"]:
        for key in ("per_request_tokens_per_s", "aggregate_tokens_per_s", "ttft_s", "usd_per_million_tokens"):
            assert x[f"{key}_low"] <= x[key] <= x[f"{key}_high"], key
        assert x["split_mode"] == "tensor" and x["gpus_per_replica"] == x["tensor_parallel"]


def test_serve_llamacpp_layouts_and_launch(tmp_path: Path) -> None:
    """serve takes llama.cpp: replicas against one llama-server split by layer (or row) over the GPUs,
    and the launch command carries -sm and the parallel slots."""
    path = tmp_path / "llama31-8b-q4_k_m.gguf"
    llama31_8b_q4_k_m(path)
    proc = run("serve", str(path), "--users", "4", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "8k", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    names = {(x["replicas"], x["gpus_per_replica"], x["split_mode"]) for x in data["layouts"]}
    assert names == {(2, 1, "layer"), (1, 2, "layer")}
    assert data["launch"]["llamacpp"]["command"].startswith("llama-server -m ")
    row = json.loads(
        run(
            "serve", str(path), "--users", "1", "--gpu", "RTX4090", "--gpus", "2", "-sm", "row", "--json"
        ).stdout
    )
    split = next(x for x in row["layouts"] if x["gpus_per_replica"] == 2)
    assert split["split_mode"] == "row"
    assert (
        "-sm row"
        in run("serve", str(path), "--users", "1", "--gpu", "RTX4090", "--gpus", "2", "-sm", "row").stdout
    )
    human = run("serve", str(path), "--users", "4", "--gpu", "RTX4090", "--gpus", "2")
    assert "one stream gets no faster" in human.stdout or "replicas beat" in human.stdout


def test_serve_input_errors_for_llamacpp() -> None:
    bad = run("serve", "Qwen3-8B", "--users", "4", "--engine", "llamacpp", "--split-mode", "column")
    assert bad.returncode == 2 and "--split-mode" in bad.stderr
    vllm_sm = run("serve", "Qwen3-8B", "--users", "4", "--split-mode", "row")
    assert vllm_sm.returncode == 2 and "--split-mode" in vllm_sm.stderr
    assert run("serve", "Qwen3-8B", "--users", "4", "--engine", "transformers").returncode == 2


def test_replicas_versus_tp_follow_the_measurements() -> None:
    """Lambda (8x H100 SXM, Llama-3.1-8B-FP8, 320 requests): replicas beat TP, TP=8 well below 8
    replicas (measured 0.14 of them); gpustack (gpt-oss-120b, H100): TP=2 beats two KV-starved TP=1
    replicas; dennislee22 (Qwen2-7B, A100, 200 requests): two TP=1 replicas beat one TP=2."""

    def layouts(*args: str) -> dict[tuple[int, int], dict[str, float]]:
        data = json.loads(run("serve", *args, "--json").stdout)
        return {(x["replicas"], x["tensor_parallel"]): x for x in data["layouts"]} | {
            (0, 0): data["recommendation"]
        }

    lam = layouts(
        "Llama-3.1-8B",
        "--dtype",
        "fp8",
        "--users",
        "320",
        "--gpu",
        "H100",
        "--gpus",
        "8",
        "--ctx",
        "4k",
        "--prompt-tokens",
        "215",
        "--output-tokens",
        "194",
    )
    assert lam[(0, 0)]["replicas"] == 8
    assert lam[(1, 8)]["aggregate_tokens_per_s"] < 0.5 * lam[(8, 1)]["aggregate_tokens_per_s"]
    oss = layouts("gpt-oss-120b", "--users", "1000", "--gpu", "H100", "--gpus", "2", "--ctx", "4k")
    assert (
        oss[(0, 0)]["tensor_parallel"] == 2
        and "KV cache"
        in json.loads(
            run(
                "serve",
                "gpt-oss-120b",
                "--users",
                "1000",
                "--gpu",
                "H100",
                "--gpus",
                "2",
                "--ctx",
                "4k",
                "--json",
            ).stdout
        )["why"]
    )
    dl = layouts(
        "Qwen2.5-7B",
        "--users",
        "200",
        "--gpu",
        "A100-80GB",
        "--gpus",
        "2",
        "--ctx",
        "2k",
        "--prompt-tokens",
        "1024",
        "--output-tokens",
        "1024",
    )
    assert dl[(0, 0)]["replicas"] == 2
    assert dl[(2, 1)]["aggregate_tokens_per_s"] > dl[(1, 2)]["aggregate_tokens_per_s"]


def test_which_speed_uses_the_engine_model() -> None:
    spec = catalog_spec("Qwen3-8B")
    fast = throughput.decode_step(spec, workload(spec, 8192), H100, 1, 1, 4096)
    slow = throughput.decode_step(
        spec, replace(workload(spec, 8192), engine=EngineSettings(name="transformers")), H100, 1, 1, 4096
    )
    assert fast and slow and fast.per_sequence_tokens_per_s > slow.per_sequence_tokens_per_s


def test_exact_bits_per_weight() -> None:
    """--dtype bpwN: linear layers at exactly N bits per weight (EXL2 2.5 bpw, GGUF IQ2_XS 2.3125), the
    rest 16-bit; a decode step reads them at that size."""
    spec = catalog_spec("Llama-3.1-70B")
    work = workload(spec, 4096, dtype="bpw2.5")
    assert work.weights.name == "bpw2.5" and work.weights.linear_bytes == 2.5 / 8
    int4 = workload(spec, 4096, dtype="int4")
    assert throughput.decode_weight_bytes(spec, work, 1, 1) < throughput.decode_weight_bytes(spec, int4, 1, 1)
    for bad in ("bpw0.5", "bpwx", "bpwnan"):
        proc = run("fit", "Llama-3.1-70B", "--dtype", bad, "--gpu", "RTX4090")
        assert proc.returncode == 2 and "--dtype" in proc.stderr, bad
