"""Calibration of gpusize's throughput model against published measurements.

Reads tests/data/throughput_records.yaml (each record: source URL, verbatim quote, measured figures,
how gpusize reproduces it, calibration or holdout set), predicts every figure with the product code
(gpusize.serving.throughput / load), fits the constants of gpusize.serving.calibrated on the
calibration records only, and prints the calibration table (source, engine/version, GPU, model,
setting, measured, predicted, residual) with per-engine MAE and worst case, calibration and holdout.

    python bench/calibrate_throughput.py          # the table with the constants in calibrated.py
    python bench/calibrate_throughput.py --fit    # refit and print the constants to paste
    python bench/calibrate_throughput.py --loso > bench/VALIDATION.md   # leave one source out
    python bench/calibrate_throughput.py --per-expert --loso   # the model published until 2026-12-03
    python bench/calibrate_throughput.py --moe-kernel --loso   # the same for the tried MoE model
    python bench/calibrate_throughput.py --expert-bytes --loso   # ... the tried per-byte expert model
    python bench/calibrate_throughput.py --moe-config --loso   # ... the tried tuned-config expert model
    python bench/calibrate_throughput.py --expert-blocks --loso   # ... per-expert cost + per gate_up block
    python bench/calibrate_throughput.py --nccl-pcie --loso   # ... NCCL's PCIe all-reduce latency
    python bench/calibrate_throughput.py --loso --write-ranges   # ... and re-range the answers:
        # bench/results/loso.json and gpusize/serving/speed_ranges.py (`--from-results`: from the
        # recorded loso.json, no refit)

tests/serving/test_throughput_conformance.py imports this module: it recomputes the fit and checks the
holdout figures against their tolerances.
"""

from __future__ import annotations

import functools
import math
import re
import statistics
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from gpusize.core import kvcache
from gpusize.core.engines import engine as engine_model
from gpusize.core.engines.vllm import scheduler_limits
from gpusize.core.gpu import GpuSpec
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings, Request, StoredLayers, Workload, resolve
from gpusize.serving import calibrated, load, speed_ranges
from gpusize.serving.layouts import Demand
from gpusize.serving.throughput import LlamaCppPlacement, build_of, decode_step, prefill_seconds
from gpusize.sources.catalog import find_gpu, find_model

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "tests" / "data" / "throughput_records.yaml"
GIB = 1 << 30

#: GGUF file types: (token embedding, output head, average) bits per weight, from ggml's block sizes
#: (Q4_K: 144 B per 256 = 4.5; Q6_K: 210 B per 256 = 6.5625; Q4_0: 18 B per 32 = 4.5). The Q4_K_M
#: average, used when a record states no file size, is Meta-Llama-3-8B's: 4.58 GiB x 8 / 8.03 B params.
GGUF_BITS = {
    "Q4_K_M": (4.5, 6.5625, 4.90),
    "Q4_0": (4.5, 6.5625, 4.5),
    "Q8_0": (8.5, 8.5, 8.5),
    "F16": (16.0, 16.0, 16.0),
    "BF16": (16.0, 16.0, 16.0),
    # gpt-oss MXFP4 files: experts MXFP4 (4.25 bits), the embedding and head Q8_0 (llama-quantize's
    # MXFP4_MOE keeps the other tensors at 8 bits); every such record gives the file's size
    "MXFP4": (8.5, 8.5, 4.25),
}

#: Figure -> the class whose tolerance applies: single-stream decode, throughput under load, first token.
FIGURE_CLASS = {
    "per_request_tokens_per_s": "decode",
    "output_tokens_per_s": "aggregate",
    "end_to_end_latency_s": "aggregate",
    "ttft_ms": "ttft",
    "prefill_tokens_per_s": "ttft",
    # the spread of the time to first token over a run's requests (`load.FirstTokenSpread`, no fitted
    # constant of its own): classes no stage fits on, reported beside the mean
    "ttft_median_ms": "ttft_p50",
    "ttft_p99_ms": "ttft_p99",
}
#: The quantile each spread figure is (vLLM's and SGLang's bench_serving print the median and P99).
FIGURE_QUANTILE = {"ttft_median_ms": 0.5, "ttft_p99_ms": 0.99}


@dataclass(frozen=True)
class Record:
    id: str
    engine: str  # the engine gpusize models it with
    engine_version: str
    gpu_description: str
    model_description: str
    source: str
    figures: dict[str, float]
    use: dict[str, Any]
    known_miss: dict[str, str] = field(default_factory=dict)

    @property
    def set(self) -> str:
        return str(self.use["set"])

    @property
    def group(self) -> str:
        """The engine, with "/AMD" for the ROCm builds of vLLM and SGLang (AMD GPUs fit only the ROCm
        constants, `ROCM_NAMES`) and llama.cpp's build where it has constants of its own
        ("llamacpp/metal"): the rule every answer's range follows (`load.speed_group`)."""
        s = scenario(self.id)
        return load.speed_group(self.engine, s.gpu.vendor, build_of(s.work.engine, s.gpu))

    @property
    def domain(self) -> str:
        """Which constants the record may fit: its build's ("metal", "vulkan", "rocm": llama.cpp's own),
        the ROCm constants on AMD ("AMD"), else the engine's ("")."""
        s = scenario(self.id)
        build = build_of(s.work.engine, s.gpu)
        if build not in (None, "cuda"):
            return str(build)
        return "AMD" if s.gpu.vendor == "AMD" else ""

    @property
    def concurrency(self) -> int:
        return int(self.use.get("concurrency", 1))

    def figure_class(self, figure: str) -> str:
        kind = FIGURE_CLASS[figure]
        if kind == "decode":
            kind = load.per_request_metric(self.concurrency)
        if figure == "end_to_end_latency_s" and self.concurrency == 1:
            return "decode"
        return kind

    def setting(self) -> str:
        u = self.use
        parts = [u["scenario"], f"c={self.concurrency}"]
        if u.get("gpus", 1) > 1:
            parts.append(
                f"{u['gpus']} GPUs " + (f"TP{u.get('tp', 1)}" if "tp" in u else u.get("split_mode", ""))
            )
        if u.get("prompt_tokens") is not None:
            parts.append(f"{u['prompt_tokens']}/{u.get('output_tokens', 0)} tok")
        return " ".join(parts)


@functools.cache
def _document() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(RECORDS.read_text())
    return data


def multinode_records() -> list[dict[str, Any]]:
    """The records of one engine over several servers (`use.nodes` > 1): the holdout of the network
    term, predicted through gpusize/serving/nodes.py by tests/serving/test_multinode_records.py. The
    one-server harness here (its fit, holdout classes and leave-one-source-out ranges) leaves them
    out: it predicts one server's speed, without the inter-node traffic."""
    return [r for r in _document()["records"] if r["use"].get("nodes", 1) > 1]


def record_arch(rec: Record) -> str:
    """The architecture group a record's figures are validated and ranged in (`load.speed_arch`)."""
    s = scenario(rec.id)
    return load.speed_arch(s.spec, s.work, s.gpu)


def load_records() -> list[Record]:
    """The one-server records (multinode_records are left out)."""
    out = []
    for r in _document()["records"]:
        if r["use"].get("nodes", 1) > 1:
            continue
        use = dict(r["use"])
        out.append(
            Record(
                id=r["id"],
                engine=use["engine"],
                engine_version=r["engine_version"],
                gpu_description=r["gpu"],
                model_description=r["model"],
                source=r["source"],
                figures=dict(r["figures"]),
                use=use,
                known_miss=dict(r.get("known_miss") or {}),
            )
        )
    return out


@functools.cache
def _spec(name: str) -> ModelSpec:
    configs = _document()["configs"]
    config = configs[name]["config"] if name in configs else find_model(name).config
    return parse_config(config)


@functools.cache
def _gpu(name: str, interconnect: str | None) -> GpuSpec:
    inline = _document()["gpus"]
    if name in inline:
        g = inline[name]
        gpu = GpuSpec(
            name=name,
            full_name=g["full_name"],
            vendor="NVIDIA",
            segment=g["segment"],
            architecture=g["architecture"],
            memory_type=g["memory_type"],
            marketing_memory_gb=g["marketing_memory_gb"],
            memory_mib=g["memory_mib"],
            ecc="none",
            interconnect=g["interconnect"],
            source=g["source"],
            bandwidth_gbps=g["bandwidth_gbps"],
            bf16_tflops=g.get("bf16_tflops"),
            pcie_gen=g.get("pcie_gen"),
            nvlink_gbps=g.get("nvlink_gbps"),
        )
    else:
        gpu = find_gpu(name)
    if interconnect == "pcie":  # measured without NVLink bridges
        gpu = replace(gpu, interconnect="pcie", nvlink_gbps=None)
    if interconnect == "pcie-host":  # no peer access between the GPUs: traffic through host memory
        gpu = replace(gpu, interconnect="pcie", nvlink_gbps=None, segment="consumer")
    return gpu


def _stored(spec: ModelSpec, gguf: dict[str, Any]) -> StoredLayers:
    """Per-block bytes of a GGUF file: its size (or the type's average bits) less the embedding and
    output head at their types' bits, spread evenly over the blocks."""
    embd_bits, out_bits, avg_bits = GGUF_BITS[gguf["file_type"]]
    counts = spec.params
    text = counts.total - counts.vision  # a GGUF holds the text model (the vision tower is a separate mmproj)
    total = gguf["file_gib"] * GIB if "file_gib" in gguf else text * avg_bits / 8
    embd = counts.embedding * embd_bits / 8
    head = 0.0 if spec.tie_word_embeddings else spec.vocab_size * spec.hidden_size * out_bits / 8
    n = len(spec.layers)
    block = (total - embd - head) / n
    return StoredLayers(tuple(int(block) for _ in range(n)), int(embd), int(head))


@dataclass(frozen=True)
class Scenario:
    spec: ModelSpec
    work: Workload
    gpu: GpuSpec
    tp: int
    llamacpp: LlamaCppPlacement | None


@functools.cache
def scenario(rid: str) -> Scenario:
    rec = next(r for r in load_records() if r.id == rid)
    u = rec.use
    spec = _spec(u.get("config") or u["model"])
    prompt, output = u.get("prompt_tokens") or 0, u.get("output_tokens") or 0
    settings = EngineSettings(
        name=rec.engine,
        gpu_memory_utilization=u.get("utilization"),
        n_gpu_layers=u.get("n_gpu_layers"),
        enforce_eager=bool(u.get("enforce_eager", False)),
        backend=u.get("backend"),
        max_num_batched_tokens=u.get("max_num_batched_tokens"),
        enable_dp_attention="dp_size" in u,  # SGLang --enable-dp-attention --dp-size N
        dp_size=u.get("dp_size"),
        data_parallel_size=u.get("data_parallel_size"),  # vLLM --data-parallel-size (use.tp: all GPUs)
        enable_expert_parallel=bool(u.get("enable_expert_parallel", False)),
    )
    stored = _stored(spec, u["gguf"]) if "gguf" in u else None
    request = Request(
        context_tokens=max(prompt + output, 256),
        dtype=u.get("dtype", "auto"),
        kv_dtype=u.get("kv_dtype", "auto"),
        engine=settings,
        stored_layers=stored,
        checkpoint_bytes=int(sum(stored.layer_bytes) + stored.token_embd_bytes + stored.output_bytes)
        if stored
        else None,
    )
    model = engine_model(rec.engine)
    work = resolve(spec, request, model.settings, model.releases)
    release = record_release(rec)
    if release is not None:  # the speed model's release only (async scheduling, tuned configs)
        work = replace(work, engine=replace(work.engine, version=release))
    gpu = _gpu(u["gpu"], u.get("interconnect"))
    llamacpp = None
    if rec.engine == "llamacpp":
        llamacpp = LlamaCppPlacement(
            gpus=u.get("gpus", 1),
            split_mode=u.get("split_mode", "layer"),
            host_gbps=u.get("host_gbps", 89.6),
            cpu_moe_layers=u.get("n_cpu_moe", 0),
        )
    return Scenario(spec, work, gpu, u.get("tp", 1), llamacpp)


@functools.cache
def capacity(rid: str) -> int:
    """Sequences the engine admits at once: its KV pool (the measured one when the record states it)
    over the mean context, capped by max_num_seqs."""
    rec = next(r for r in load_records() if r.id == rid)
    s, u = scenario(rid), rec.use
    prompt, output = u.get("prompt_tokens") or 0, u.get("output_tokens") or 0
    if "kv_cache_gib" in u:
        per_token = kvcache.kv_cache_bytes_per_token(s.spec, s.work.kv_bytes, s.tp)
        tokens = int(u["kv_cache_gib"] * GIB / per_token)
    else:
        cand = engine_model(s.work.engine.name).evaluate(s.spec, s.gpu, s.tp, s.work)
        tokens = cand.kv_cache_capacity_tokens or 0
    seqs = scheduler_limits(s.gpu, s.work).max_num_seqs
    return max(1, min(seqs, tokens // max(prompt + output // 2, 1)))


def predict(rec: Record, figure: str) -> float | None:
    """gpusize's estimate of one figure of one record."""
    s = scenario(rec.id)
    u = rec.use
    prompt, output, c = u.get("prompt_tokens") or 0, u.get("output_tokens") or 0, rec.concurrency
    kind = u["scenario"]
    if kind == "prefill":
        t = prefill_seconds(s.spec, s.work, s.gpu, s.tp, prompt)
        return prompt / t if t else None
    if kind == "decode":
        step = decode_step(s.spec, s.work, s.gpu, s.tp, 1, prompt + output // 2, s.llamacpp)
        return step.per_sequence_tokens_per_s if step else None
    if kind == "static":
        seconds = load.static_batch_seconds(s.spec, s.work, s.gpu, s.tp, c, prompt, output)
        return seconds
    cap = capacity(rec.id)
    # the share of each prompt the engine's prefix cache serves, where the benchmark's own procedure
    # says (`use.prefix_hit_rate`), by the rule every plan uses (Demand.cached_tokens)
    cached = Demand(prefix_hit_rate=float(u.get("prefix_hit_rate", 0.0))).cached_tokens(prompt)
    if kind == "steady":
        # a run of `use.num_prompts` requests starts as a burst; `use.lengths: fixed` (every prompt and
        # reply of one length) keeps its clients in step (load.Arrivals)
        arrivals = load.Arrivals(u.get("num_prompts"), u.get("lengths") == "fixed")
        point = load.steady(
            s.spec, s.work, s.gpu, s.tp, c, prompt, output, cap, s.llamacpp, cached=cached, arrivals=arrivals
        )
    else:
        point = load.burst(s.spec, s.work, s.gpu, s.tp, c, prompt, output, cap, cached=cached)
    if point is None:
        return None
    if figure == "per_request_tokens_per_s":
        return point.per_request_tokens_per_s
    if figure == "output_tokens_per_s":
        return point.aggregate_tokens_per_s
    if figure in FIGURE_QUANTILE:
        at = point.ttft_quantile(FIGURE_QUANTILE[figure])
        return at * 1000 if at is not None else None
    return point.ttft_s * 1000 if point.ttft_s is not None else None


@dataclass(frozen=True)
class Row:
    record: Record
    figure: str
    measured: float
    predicted: float | None

    @property
    def kind(self) -> str:
        return self.record.figure_class(self.figure)

    @property
    def error(self) -> float | None:
        """predicted / measured - 1 (for a time, the same sign convention: + means too slow)."""
        if self.predicted is None:
            return None
        return self.predicted / self.measured - 1

    @property
    def log_residual(self) -> float | None:
        """log(measured / predicted) in the direction of speed (a time is inverted)."""
        if not self.predicted:
            return None
        r = math.log(self.measured / self.predicted)
        return -r if self.figure in ("ttft_ms", "end_to_end_latency_s") else r


def rows(records: list[Record] | None = None) -> list[Row]:
    out = []
    for rec in records or load_records():
        for figure, measured in rec.figures.items():
            out.append(Row(rec, figure, measured, predict(rec, figure)))
    return out


def summary(table: list[Row]) -> dict[tuple[str, str, str], tuple[int, float, float]]:
    """(engine, set, class) -> (count, mean absolute error, worst absolute error), known misses out."""
    groups: dict[tuple[str, str, str], list[float]] = {}
    for row in table:
        if row.error is None or row.figure in row.record.known_miss:
            continue
        groups.setdefault((row.record.group, row.record.set, row.kind), []).append(abs(row.error))
    return {k: (len(v), statistics.fmean(v), max(v)) for k, v in sorted(groups.items())}


def breakdown(table: list[Row]) -> dict[tuple[str, str, str], tuple[int, float, int, float | None]]:
    """Holdout single-stream decode by (engine, dense | MoE, GPU segment): (figures, MAE with the known
    misses, figures without them, MAE without them)."""
    groups: dict[tuple[str, str, str], list[tuple[float, bool]]] = {}
    for row in table:
        r = row.record
        if r.set != "holdout" or row.kind != "decode" or row.error is None:
            continue
        s = scenario(r.id)
        key = (r.group, record_arch(r), s.gpu.segment)
        groups.setdefault(key, []).append((abs(row.error), row.figure in r.known_miss))
    out = {}
    for key, errors in sorted(groups.items()):
        claimed = [e for e, miss in errors if not miss]
        mae = statistics.fmean(claimed) if claimed else None
        out[key] = (len(errors), statistics.fmean(e for e, _ in errors), len(claimed), mae)
    return out


def print_table(table: list[Row]) -> None:
    print(
        "| set | id | engine / version | GPU | model | setting | figure | measured | predicted | residual |"
    )
    print("|---|---|---|---|---|---|---|---:|---:|---:|")
    for row in sorted(table, key=lambda x: (x.record.engine, x.record.set, x.record.id)):
        r = row.record
        pred = f"{row.predicted:,.2f}" if row.predicted is not None else "-"
        err = f"{row.error:+.1%}" if row.error is not None else "-"
        miss = " (known miss)" if row.figure in r.known_miss else ""
        print(
            f"| {r.set} | [{r.id}]({r.source}) | {r.engine} {r.engine_version[:28]} | "
            f"{r.gpu_description[:28]} | "
            f"{r.model_description[:30]} | {r.setting()} | {row.figure} | {row.measured:,.2f} | {pred} | "
            f"{err}{miss} |"
        )
    print()
    print("| engine | set | figure class | records | MAE | worst |")
    print("|---|---|---|---:|---:|---:|")
    for (eng, st, kind), (n, mae, worst) in summary(table).items():
        print(f"| {eng} | {st} | {kind} | {n} | {mae:.1%} | {worst:.1%} |")
    print()
    print("| holdout single-stream decode | model | GPU | figures | MAE | without known misses |")
    print("|---|---|---|---:|---:|---|")
    for (eng, kind, segment), (n, mae, m, claimed) in breakdown(table).items():
        rest = f"{m}: {claimed:.1%}" if claimed is not None else "0: -"
        print(f"| {eng} | {kind} | {segment} | {n} | {mae:.1%} | {rest} |")


# --------------------------------------------------------------------------- the fit

#: vLLM's decode constants that every model pays (bandwidth, per step, per layer, all-reduces), fitted
#: on the dense models' records, and those only a MoE model pays (per routed expert run of the
#: fused_moe kernel, matmul_ogs's tile rate for MXFP4 experts, per MoE layer), fitted on the MoE
#: models' records (`calibration_records`).
VLLM_DENSE_NAMES = (
    "vllm.bandwidth_efficiency.hbm3",
    "vllm.bandwidth_efficiency.hbm2",
    "vllm.step_s",
    "vllm.layer_s",
    "ALLREDUCE_NVLINK_S",
    "ALLREDUCE_HOP_S.pcie",
    "ALLREDUCE_HOP_S.pcie-host",
)
VLLM_MOE_NAMES = ("vllm.kernel_s", "vllm.moe_mweight_s.matmul_ogs", "vllm.moe_layer_s")

#: The fit, in stages: (engines whose calibration rows are used, figure classes, constants). Each
#: stage minimises the squared log residuals of its rows over its constants, the others held. A name
#: is "engine.field" (EngineSpeed), "engine.bandwidth_efficiency.class", or a module constant
#: ("ALLREDUCE_HOP_S.pcie", "LAYER_SPLIT_HOP_S"). Fractions (efficiencies, MFU) stay in (0, 1].
STAGES: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (
        ("llamacpp",),
        ("decode",),
        (
            "llamacpp.bandwidth_efficiency.gddr",
            "llamacpp.bandwidth_efficiency.hbm2",
            "llamacpp.step_s",
            "llamacpp.layer_s",
            "LAYER_SPLIT_HOP_S",
            "ROW_SPLIT_SYNC_S",
            "HOST_EFFICIENCY",
        ),
    ),
    # llama.cpp's other builds, each on its own records (`Record.domain`): bandwidth efficiency per
    # memory class it was measured on, the per-token floors and the prompt's MFU
    (
        ("llamacpp",),
        ("decode",),
        ("llamacpp/metal.bandwidth_efficiency.lpddr", "llamacpp/metal.step_s", "llamacpp/metal.layer_s"),
    ),
    (
        ("llamacpp",),
        ("decode",),
        (
            "llamacpp/vulkan.bandwidth_efficiency.gddr",
            "llamacpp/vulkan.bandwidth_efficiency.lpddr",
            "llamacpp/vulkan.step_s",
            "llamacpp/vulkan.layer_s",
        ),
    ),
    (
        ("llamacpp",),
        ("decode",),
        ("llamacpp/rocm.bandwidth_efficiency.lpddr", "llamacpp/rocm.step_s", "llamacpp/rocm.layer_s"),
    ),
    (("llamacpp",), ("ttft",), ("llamacpp/metal.prefill_mfu",)),
    (
        ("llamacpp",),
        ("ttft",),
        ("llamacpp.prefill_mfu", "llamacpp.attention_mfu", "llamacpp.prefill_tflops_ceiling"),
    ),
    # vLLM's kernel constants on its dense models' decode figures, its MoE costs on its MoE models'
    # (`calibration_records`): a MoE cost the model misprices cannot move the dense basin
    # (bench/VALIDATION.md, 2026-12-03)
    (("vllm",), ("decode",), VLLM_DENSE_NAMES),
    (("vllm",), ("decode",), VLLM_MOE_NAMES),
    (("vllm",), ("aggregate",), ("vllm.sequence_s",)),
    # on AMD GPUs only (`ROCM_NAMES`): the kernel floors' factor under ROCm, over the NVIDIA fit
    (("vllm",), ("decode", "aggregate"), ("ROCM_KERNEL_FLOOR_FACTOR",)),
    # prefill on Hopper apart (`EngineSpeed.prefill_mfu_by_family`): at one MFU its fixed-length dense
    # bursts are estimated too fast on H100 and too slow on A100 (bench/VALIDATION.md, 2026-12-04)
    # and the routed experts' grouped GEMMs at their own share of it (`EngineSpeed.expert_mfu_ratio`)
    (
        ("vllm",),
        ("ttft",),
        (
            "vllm.prefill_mfu",
            "vllm.prefill_mfu_by_family.Hopper",
            "vllm.expert_mfu_ratio",
            "vllm.request_s",
        ),
    ),
    # SGLang's per-step cost from its decode-bound figures alone, as vLLM's decode stage fits its own:
    # fitted on the aggregate of the ShareGPT bursts too, a fold without gpustack's Qwen3-8B page put
    # it at whatever slows those bursts (its c=4 figures then 5x too slow left out)
    (("sglang",), ("decode",), ("sglang.step_s",)),
    (("sglang",), ("ttft",), ("sglang.request_s",)),
    (("transformers",), ("decode",), ("transformers.layer_s",)),
)
FRACTIONS = ("bandwidth_efficiency", "mfu", "EFFICIENCY")
RESTARTS = 12
PRIOR_WIDTH = 30.0


#: The tried MoE model (bench/VALIDATION.md, "Tried: the MoE kernel's tiles"), `--moe-kernel`: the
#: per-routed-expert cost `expert_s` replaced by the MoE kernel's weight tiles over the SMs, one time per
#: million weights per SM for each kernel family (Triton fused_moe; triton_kernels matmul_ogs for MXFP4),
#: fitted in the vLLM decode stage; and the constants its full fit (`--moe-kernel --fit`) gave, which
#: `--moe-kernel --loso` predicts the never-fitted sources with.
MOE_KERNEL_NAMES = ("vllm.moe_mweight_s.fused_moe", "vllm.moe_mweight_s.matmul_ogs")
MOE_KERNEL_FIT = {
    "vllm.bandwidth_efficiency.hbm3": 0.805,
    "vllm.bandwidth_efficiency.hbm2": 0.694,
    "vllm.step_s": 0.000654,
    "vllm.layer_s": 1.91e-05,
    "vllm.moe_mweight_s.fused_moe": 0.000207,
    "vllm.moe_mweight_s.matmul_ogs": 3.24e-05,
    "vllm.moe_layer_s": 8.52e-06,
    "ALLREDUCE_NVLINK_S": 5.16e-06,
    "ALLREDUCE_HOP_S.pcie": 2.47e-05,
    "ALLREDUCE_HOP_S.pcie-host": 2.01e-05,
    "vllm.sequence_s": 8.96e-05,
    "vllm.prefill_mfu": 0.518,
    "vllm.request_s": 0.0467,
    "sglang.step_s": 0.00124,
    "sglang.request_s": 0.0222,
    "transformers.layer_s": 8.86e-05,
}


def _expert_cost_fitted_as(replacement: tuple[str, ...]) -> None:
    """The fitted stages with the MoE layers' published cost (`vllm.kernel_s`, the layer-kernels
    model) replaced by the constants of a tried expert model; `kernel_s` then 0 unless the
    replacement fits it. (Every tried model before 2026-12-03's fifth session was tried in place of
    the per-routed-expert cost `expert_s`, with no kernel term: so they reproduce.)"""
    global STAGES
    STAGES = tuple(
        (
            engines,
            classes,
            tuple(n for name in names for n in (replacement if name == "vllm.kernel_s" else (name,))),
        )
        for engines, classes, names in STAGES
    )
    if "vllm.kernel_s" not in replacement:
        set_constant("vllm.kernel_s", 0.0)


def _refit(model: str) -> None:
    """Fit the tried `model` from START and print its constants (stderr)."""
    print(f"# fitting the {model} expert model from START", file=sys.stderr)
    for name, value in fit().items():
        print(f"# {name} = {rounded(value)}", file=sys.stderr)


def use_moe_kernel() -> None:
    """Switch this process to the tried MoE model: the vLLM decode stage fits the kernel's times in
    place of `expert_s` (set to 0), and the constants are those of its full fit (MOE_KERNEL_FIT)."""
    _expert_cost_fitted_as(MOE_KERNEL_NAMES)
    set_constant("vllm.expert_s", 0.0)
    for name, value in MOE_KERNEL_FIT.items():
        set_constant(name, value)
    inherit("sglang")
    inherit("transformers")


#: The tried per-byte expert model (bench/VALIDATION.md), `--expert-bytes`: the per-routed-expert
#: cost `expert_s` replaced (or joined, `--expert-bytes-floor`) by a cost per byte of the experts a
#: step touches on one GPU, fitted in the vLLM decode stage from START.
EXPERT_BYTES_NAMES = ("vllm.expert_byte_s",)


def use_expert_bytes(keep_floor: bool) -> None:
    """Switch this process to the tried per-byte expert model and fit it from START."""
    extra = ("vllm.expert_s", *EXPERT_BYTES_NAMES) if keep_floor else EXPERT_BYTES_NAMES
    _expert_cost_fitted_as(extra)
    if not keep_floor:
        set_constant("vllm.expert_s", 0.0)
    _refit("per-byte")


#: The tried per-block expert model (bench/VALIDATION.md), `--expert-blocks`: beside the fixed
#: per-routed-expert cost `expert_s`, `expert_block_s` per thread block of the expert's gate_up GEMM
#: on one GPU (`throughput.expert_column_blocks`: ceil(2 x intermediate / tp / BLOCK_N), what shrinks
#: with TP in vLLM's fused_moe grid), both fitted in the vLLM decode stage from START (SGLang and
#: Transformers inherit them).
EXPERT_BLOCKS_NAMES = ("vllm.expert_s", "vllm.expert_block_s")


#: `--expert-blocks-pinned`: `expert_block_s` held at the slope gpt-oss-120b's two H100 calibration
#: records give on their own (implied per-expert cost 2.3-2.8 us at TP=1, 45 blocks of 128, and
#: 1.25-1.64 us at TP=2, 23 blocks: about 0.05 us a block), `expert_s` and the rest refitted: what the
#: Qwen3-Next TP ratio and the out-of-sample figures become when the TP-shrinking part is forced in.
EXPERT_BLOCK_PINNED_S = 5e-8


def use_expert_blocks(pinned: bool = False) -> None:
    """Switch this process to the tried per-block expert model and fit it from START (`pinned`:
    expert_block_s held at EXPERT_BLOCK_PINNED_S, not fitted)."""
    names_in = EXPERT_BLOCKS_NAMES[:1] if pinned else EXPERT_BLOCKS_NAMES
    _expert_cost_fitted_as(names_in)
    if pinned:
        set_constant("vllm.expert_block_s", EXPERT_BLOCK_PINNED_S)
    _refit("per-block")


#: The tried per-weight expert model (bench/VALIDATION.md), `--expert-size`: beside the fixed
#: per-routed-expert cost `expert_s`, `expert_weight_s` per weight of the whole expert
#: (`core.params.routed_expert_params`: a cost that grows with the expert's size, the same at every TP),
#: both fitted in the vLLM decode stage from START (SGLang and Transformers inherit them).
EXPERT_SIZE_NAMES = ("vllm.expert_s", "vllm.expert_weight_s")


def use_expert_size() -> None:
    """Switch this process to the tried per-weight expert model and fit it from START."""
    _expert_cost_fitted_as(EXPERT_SIZE_NAMES)
    _refit("per-weight")


#: The tried tuned-config model (bench/VALIDATION.md), `--moe-config`: the per-routed-expert cost takes
#: `expert_tuned_s` where the record's release ships a tuned fused-MoE Triton config for the layer on
#: its GPU (`gpusize.serving.moe_config`), `expert_s` elsewhere; both fitted in the vLLM decode stage
#: from START (SGLang inherits them, as it does `expert_s`). SGLANG_MOE_RELEASE: the release each
#: SGLang MoE record ran, by id prefix (bench/moe_configs_build.py reads those wheels; a main-branch
#: build: the nearest); a vLLM record's is `vllm_release`'s, from its engine_version.
MOE_CONFIG_NAMES = ("vllm.expert_s", "vllm.expert_tuned_s")
SGLANG_MOE_RELEASE = {
    "gs-sglang-": "0.5.4.post2",
    "sglang-gptoss120b-": "0.5.2",
    "achatbot183-": "0.5.2",
    "inferencex870-": "0.5.9",
    "sglang10404-": "0.5.3",
    "sglang18195-": "0.5.8",
    "sglang10467-": "0.5.3",
}
USE_MOE_CONFIG = False


#: vLLM records whose engine_version text names no release: the release they ran, from the text.
VLLM_RELEASE_NAMED = {
    "vLLM acbed3e": "0.2.0",  # 2023-10-06, before any release gpusize models; what matters: < 0.14
    "vLLM main of 2025-08-19": "0.10.1",  # the main branch between 0.10.1 and 0.10.2
    "vllm/vllm-openai:gptoss image": "0.10.1",  # the gpt-oss image of August 2025 (0.10.1+gptoss)
    # PyPI upload dates: 0.22.0 2026-05-29, 0.22.1 2026-06-05; 0.9.1 2025-06-10, 0.9.2 2025-07-07
    "vLLM main of 2026-06-03": "0.22.0",
    "vLLM main of 2025-07-10": "0.9.2",
    "vllm/vllm-openai:minimax-m3 image": "0.23.0",  # built from the m3_release branch, June 2026
}


def vllm_release(rec: Record) -> str:
    """The vLLM release a record ran, for the speed model (the first X.Y.Z in its engine_version, or
    VLLM_RELEASE_NAMED); the memory model keeps the release the records were sized with."""
    for prefix, version in VLLM_RELEASE_NAMED.items():
        if rec.engine_version.startswith(prefix):
            return version
    found = re.search(r"\d+\.\d+\.\d+(?:\.\d+)?", rec.engine_version)
    if found is None:
        raise ValueError(f"{rec.id}: no vLLM release in {rec.engine_version!r}")
    return found.group(0)


def record_release(rec: Record) -> str | None:
    """The release the speed model runs a record at: a vLLM record's always (`vllm_release`: async
    scheduling from 0.14.0), an SGLang MoE record's under the tried tuned-config model
    (SGLANG_MOE_RELEASE, first matching prefix); None elsewhere (the newest)."""
    if rec.engine == "vllm":
        return vllm_release(rec)
    if not USE_MOE_CONFIG:
        return None
    return next((v for prefix, v in SGLANG_MOE_RELEASE.items() if rec.id.startswith(prefix)), None)


def use_moe_config() -> None:
    """Switch this process to the tried tuned-config model and fit it from START."""
    global USE_MOE_CONFIG
    USE_MOE_CONFIG = True
    _expert_cost_fitted_as(MOE_CONFIG_NAMES)
    _refit("tuned-config")


#: The tried PCIe all-reduce model (bench/VALIDATION.md, "Tried: NCCL's PCIe latency"), `--nccl-pcie`:
#: over peer-to-peer PCIe a CUDA-graph step's all-reduce pays NCCL's own LL ring latency
#: (calibrated.NCCL_RING_LL_BASE_S + 2 (tp - 1) x NCCL_PCI_RING_LL_HOP_S, NCCL's tuning model, not
#: fitted); an eager step (`use.enforce_eager`: vLLM before CUDA graphs) keeps the fitted
#: ALLREDUCE_HOP_S["pcie"] per ring step. No calibration record changes (the only peer-to-peer PCIe
#: TP records ran eager), so nothing is refitted (tests/serving/test_pcie_allreduce.py: what moves).


#: The model published until 2026-12-03 (fifth session), `--per-expert`: a fixed cost per routed
#: expert run (`expert_s` x the experts a step touches x MoE layers) in place of the time per kernel
#: the layers launch beyond a dense attention layer's (`kernel_s`), fitted from START; and
#: `--layer-kernels-expert`: both, fitted together.
PER_EXPERT_NAMES = ("vllm.expert_s",)


def use_per_expert(keep_kernels: bool = False) -> None:
    """Switch this process to the per-routed-expert model (`keep_kernels`: beside the layer kernels)
    and fit it from START."""
    _expert_cost_fitted_as(("vllm.kernel_s", *PER_EXPERT_NAMES) if keep_kernels else PER_EXPERT_NAMES)
    _refit("per-expert")


def use_nccl_pcie() -> None:
    """Switch this process to the tried NCCL PCIe latency for CUDA-graph steps."""
    calibrated.ALLREDUCE_PCIE_NCCL = True


def constant(name: str) -> float:
    head, _, rest = name.partition(".")
    if head in calibrated.ENGINE_SPEED:
        speed = calibrated.ENGINE_SPEED[head]
        if "." in rest:  # a table by class or kernel: bandwidth_efficiency.hbm3, moe_mweight_s.fused_moe
            table, key = rest.split(".")
            return float(getattr(speed, table).get(key, 0.0))
        return float(getattr(speed, rest) or 0.0)
    value = getattr(calibrated, head)
    return float(value[rest]) if rest else float(value)


def set_constant(name: str, value: float) -> None:
    head, _, rest = name.partition(".")
    if head in calibrated.ENGINE_SPEED:
        speed = calibrated.ENGINE_SPEED[head]
        if "." in rest:
            table, key = rest.split(".")
            calibrated.ENGINE_SPEED[head] = replace(speed, **{table: {**getattr(speed, table), key: value}})
        else:
            calibrated.ENGINE_SPEED[head] = replace(speed, **{rest: value})
    elif rest:
        getattr(calibrated, head)[rest] = value
    else:
        setattr(calibrated, head, value)


#: Up to how many sequences in flight a record's time per output token fits the decode stage (above:
#: the load stage). `--decode-16` raises it to 16 (the tried expert-size model's companion: the one
#: vLLM small-expert calibration record, PR 23151's Qwen3-30B-A3B, ran 10 sequences).
DECODE_SEQUENCES = 8


def fit_class(rec: Record, figure: str) -> str:
    """The stage a figure is fitted in: the time per output token at up to DECODE_SEQUENCES sequences
    is decode-bound (it fits the decode constants), above that it is throughput under load."""
    if figure == "per_request_tokens_per_s" and rec.concurrency <= DECODE_SEQUENCES:
        return "decode"
    return rec.figure_class(figure)


def objective(records: list[Record], classes: tuple[str, ...]) -> float:
    """Sum of squared log residuals over the records' figures of these classes (known misses out)."""
    total = 0.0
    for rec in records:
        for figure, measured in rec.figures.items():
            if figure in rec.known_miss or fit_class(rec, figure) not in classes:
                continue
            row = Row(rec, figure, measured, predict(rec, figure))
            r = row.log_residual
            total += 9.0 if r is None else r * r
    return total


def nelder_mead(f: Any, x0: list[float], steps: int = 1500, scale: float = 0.3) -> list[float]:
    """Minimise f over x (Nelder and Mead 1965, standard coefficients); x are log-constants."""
    n = len(x0)
    simplex = [list(x0)] + [[v + (scale if i == j else 0.0) for j, v in enumerate(x0)] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(steps):
        order = sorted(range(n + 1), key=lambda i: values[i])
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < 1e-10:
            break
        centre = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflect = [c + (c - w) for c, w in zip(centre, worst, strict=True)]
        fr = f(reflect)
        if fr < values[0]:
            expand = [c + 2 * (c - w) for c, w in zip(centre, worst, strict=True)]
            fe = f(expand)
            simplex[-1], values[-1] = (expand, fe) if fe < fr else (reflect, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflect, fr
        else:
            contract = [c + 0.5 * (w - c) for c, w in zip(centre, worst, strict=True)]
            fc = f(contract)
            if fc < values[-1]:
                simplex[-1], values[-1] = contract, fc
            else:
                best = simplex[0]
                simplex = [best] + [
                    [b + 0.5 * (p - b) for b, p in zip(best, q, strict=True)] for q in simplex[1:]
                ]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    return simplex[min(range(n + 1), key=lambda i: values[i])]


#: Constants fitted on the AMD (ROCm) calibration records alone; every other constant is fitted on
#: the NVIDIA ones alone, so the ROCm records move nothing the NVIDIA records fix.
ROCM_NAMES = ("ROCM_KERNEL_FLOOR_FACTOR",)


def names_domain(names: tuple[str, ...]) -> str:
    """Which records constants are fitted on (`Record.domain`): a build's ("llamacpp/metal.step_s" ->
    "metal"), the ROCm constants' ("AMD"), else the engine's ("")."""
    if names and all(n in ROCM_NAMES for n in names):
        return "AMD"
    head = names[0].partition(".")[0] if names else ""
    return head.partition("/")[2]


def calibration_records(engines: tuple[str, ...], names: tuple[str, ...] = ()) -> list[Record]:
    """The calibration records of these engines that fit the constants `names`: a build's own for its
    constants, the AMD GPUs' for the ROCm constants (`ROCM_NAMES`), the other GPUs' for every other
    constant; of those, the dense models' for VLLM_DENSE_NAMES and the MoE models' for VLLM_MOE_NAMES."""
    domain = names_domain(names)
    found = [
        r for r in load_records() if r.set == "calibration" and r.engine in engines and r.domain == domain
    ]
    if names == VLLM_DENSE_NAMES:
        return [r for r in found if scenario(r.id).spec.moe is None]
    if names == VLLM_MOE_NAMES:
        return [r for r in found if scenario(r.id).spec.moe is not None]
    return found


def _to_free(name: str, value: float) -> float:
    if any(k in name for k in FRACTIONS):
        v = min(max(value, 1e-6), 1 - 1e-6)
        return math.log(v / (1 - v))
    return math.log(max(value, 1e-9))


def _from_free(name: str, x: float) -> float:
    if any(k in name for k in FRACTIONS):
        return 1 / (1 + math.exp(-x))
    return math.exp(x)


def fit_stage(
    engines: tuple[str, ...],
    classes: tuple[str, ...],
    names: tuple[str, ...],
    steps: int,
    leave_out: str | None = None,
    exclude: frozenset[str] = frozenset(),
) -> None:
    """Fit one stage's constants on its calibration records, less the record `leave_out` and the
    records whose ids are in `exclude` (a held-out source)."""
    records = [r for r in calibration_records(engines, names) if r.id != leave_out and r.id not in exclude]

    prior = [_to_free(n, start_value(n)) for n in names]

    def f(x: list[float]) -> float:
        for name, v in zip(names, x, strict=True):
            set_constant(name, _from_free(name, v))
        # a very weak prior (1/900 per squared log unit) centred on START settles the directions
        # the records leave flat (e.g. bandwidth efficiency against per-layer cost on one GPU type)
        penalty = sum(((v - p) / PRIOR_WIDTH) ** 2 for v, p in zip(x, prior, strict=True))
        return objective(records, classes) + penalty

    x = [_to_free(n, constant(n) or 1e-5) for n in names]  # a zero start could never grow in log space
    best = f(x)
    for _ in range(RESTARTS):  # restart until a fresh simplex finds nothing better: NM can stall on a ridge
        x = nelder_mead(f, x, steps, 0.5)
        value = f(x)
        if best - value < 1e-7:
            break
        best = value
    if leave_out is None and not exclude:
        print(f"# stage {engines} {classes}: objective {objective(records, classes):.4f}", file=sys.stderr)


#: What SGLang and Transformers keep of their own when they start from vLLM's fitted kernels.
#: SGLang keeps its prefill at vLLM's general MFU: the Hopper and routed-expert shares are vLLM
#: 0.10-0.11's kernels (its bursts on H100/H200), where SGLang's own run FlashInfer / FA3 and its fused
#: MoE, and dstack's SGLang gpt-oss-120b on H200 prefills 32k-token prompts 3x faster than they allow.
OWN = {
    "sglang": ("step_s", "request_s", "prefill_mfu_by_family", "expert_mfu_ratio"),
    "transformers": ("layer_s", "sequence_s", "request_s"),
}


def inherit(engine: str) -> None:
    """SGLang and Transformers run vLLM's kernel families: start them from vLLM's fitted constants."""
    own = calibrated.ENGINE_SPEED[engine]
    keep = {name: getattr(own, name) for name in OWN[engine]}
    calibrated.ENGINE_SPEED[engine] = replace(calibrated.ENGINE_SPEED["vllm"], engine=engine, **keep)


#: Where the fit starts (fixed, so the fit is reproducible): efficiencies 0.8, MFU 0.5, times of the
#: order the research found (a few ms per step, tens of us per layer).
START = {
    "bandwidth_efficiency": 0.8,
    "mfu": 0.5,
    "EFFICIENCY": 0.6,
    "step_s": 1e-3,
    "layer_s": 5e-5,
    "expert_s": 5e-6,
    "expert_tuned_s": 5e-6,
    # a small kernel under CUDA graphs: a few microseconds from launch to the next
    "kernel_s": 5e-6,
    # the experts' bytes read a second time at an H100 SXM's 3.35 TB/s
    "expert_byte_s": 3e-13,
    # a tenth of a microsecond per thread block: a few hundred cycles of a block's prologue, K loop
    # start and epilogue at an H100's 1.98 GHz boost clock
    "expert_block_s": 1e-7,
    # a tenth of a microsecond per million weights of the expert
    "expert_weight_s": 1e-13,
    # one SM streaming its share of an H100 SXM's 3.35 TB/s at 2 bytes a weight (132 SMs): 79 us per
    # million weights
    "moe_mweight_s": 1e-4,
    "moe_layer_s": 5e-5,
    "sequence_s": 5e-5,
    "request_s": 0.03,
    "ceiling": 150.0,
    "HOP_S": 2e-5,
    "NVLINK_S": 1e-5,
    "SYNC_S": 1e-4,
    "FLOOR_FACTOR": 1.0,  # the NVIDIA floors
}


def start_value(name: str) -> float:
    return next(v for key, v in START.items() if key in name)


def fit(
    steps: int = 2000,
    rounds: int = 8,
    exclude: frozenset[str] = frozenset(),
    engines: frozenset[str] | None = None,
) -> dict[str, float]:
    """Fit every stage in order from START, and repeat (the stages share rows: a decode step at 8
    sequences pays the per-sequence cost of the load stage) until no constant moves by more than
    0.1%. SGLang and Transformers start from vLLM's fitted kernels: the same families. `exclude`:
    record ids the fit may not see (a held-out source); `engines`: refit only these engines' stages
    (the others keep their constants: their records are not in question)."""
    stages = [st for st in STAGES if engines is None or st[0][0] in engines]
    names = [name for _, _, stage_names in stages for name in stage_names]
    for name in names:
        set_constant(name, start_value(name))
    before = {name: constant(name) for name in names}
    for _ in range(rounds):
        for stage_engines, classes, stage_names in stages:
            if stage_engines in (("sglang",), ("transformers",)) and "decode" in classes:
                inherit(stage_engines[0])
            fit_stage(stage_engines, classes, stage_names, steps, exclude=exclude)
        after = {name: constant(name) for name in names}
        if all(abs(after[k] - before[k]) <= 1e-3 * abs(before[k]) + 1e-12 for k in after):
            break
        before = after
    return published_constants()


def published_constants() -> dict[str, float]:
    return {name: constant(name) for _, _, names in STAGES for name in names}


def rounded(value: float) -> float:
    """How a fitted constant is written into calibrated.py: 3 significant digits, 0 below 1 ns."""
    return 0.0 if abs(value) < 1e-9 else float(f"{value:.3g}")


# --------------------------------------------------------------------------- leave one source out

#: Engines whose stages start from another engine's fitted constants (`inherit`): refitting that
#: engine refits them too.
INHERITORS = {"vllm": ("sglang", "transformers")}


def sources(records: list[Record] | None = None) -> dict[str, list[Record]]:
    """Records by source: one URL (a pull request, an issue, a benchmark page or README) is one
    source, whatever set its records are in; held out together, since they share a lab, a method and
    often a machine."""
    out: dict[str, list[Record]] = {}
    for rec in records or load_records():
        out.setdefault(rec.source, []).append(rec)
    return out


def fold_engines(held: list[Record]) -> frozenset[str] | None:
    """The engines whose stages must be refitted without a held-out source: those of its calibration
    records, with the engines that inherit their kernels (`INHERITORS`); None when the source has no
    calibration record (the published fit never saw it: it predicts it as it is)."""
    engines = {r.engine for r in held if r.set == "calibration"}
    for eng in list(engines):
        engines.update(INHERITORS.get(eng, ()))
    return frozenset(engines) or None


def leave_one_source_out_rows(steps: int = 300, rounds: int = 2, restarts: int = 2) -> list[Row]:
    """Every record predicted by a fit that never saw its source: for each source in turn, the
    stages its calibration records touch are refitted FROM START (not from the published constants,
    which saw it) on the calibration records of every other source, and the source's figures are
    predicted; a source with no calibration record is predicted by the published fit, which never saw
    it. The published constants are restored after each fold. A fold's fit is shorter than the
    published one (`steps`, `rounds`, `restarts`): from START on all the calibration records it gives
    every published constant within 2%."""
    global RESTARTS
    saved, saved_restarts = published_constants(), RESTARTS
    # every engine's constants, not only the fitted names: a fold's `inherit` copies vLLM's fold
    # constants into SGLang's and Transformers' (bandwidth efficiencies, per-layer and per-expert
    # costs, MFU), which the published names do not cover
    engines_saved = dict(calibrated.ENGINE_SPEED)

    def restore() -> None:
        calibrated.ENGINE_SPEED.clear()
        calibrated.ENGINE_SPEED.update(engines_saved)
        for name, value in saved.items():
            set_constant(name, value)

    out: list[Row] = []
    try:
        RESTARTS = restarts
        for i, (source, held) in enumerate(sources().items()):
            engines = fold_engines(held)
            if engines is not None:
                print(f"# fold {i + 1}: {source} ({', '.join(sorted(engines))})", file=sys.stderr, flush=True)
                fit(steps, rounds, exclude=frozenset(r.id for r in held), engines=engines)
            out += [Row(rec, f, m, predict(rec, f)) for rec in held for f, m in rec.figures.items()]
            restore()
    finally:
        RESTARTS = saved_restarts
        restore()
    return out


#: The issue's accuracy targets (label, figure class, lowest concurrency, limit on the mean error).
TARGET_ROWS = (
    ("single-stream decode", "decode", 1, 0.15),
    ("aggregate at concurrency >= 8", "aggregate", 8, 0.20),
    ("TTFT under load (concurrency >= 8)", "ttft", 8, 0.25),
)

#: Concurrency bands the validation is reported by (sequences in flight): the product's, which its
#: printed ranges are grouped by.
BANDS = load.BANDS
band = load.band


def validation_groups(
    table: list[Row], keys: tuple[str, ...], misses: bool = True
) -> dict[tuple[str, ...], list[float]]:
    """|error| of every row with a prediction, grouped by the named keys: engine (with /AMD),
    arch (dense | MoE), band (concurrency), metric (decode | aggregate | ttft); `misses` False leaves
    the known misses out."""
    out: dict[tuple[str, ...], list[float]] = {}
    for row in table:
        if row.error is None or (not misses and row.figure in row.record.known_miss):
            continue
        if "metric" not in keys and row.kind not in RANGED_METRICS:  # the TTFT spread: by metric only
            continue
        r = row.record
        values = {
            "engine": r.group,
            "arch": record_arch(r),
            "band": band(r.concurrency),
            "metric": row.kind,
        }
        out.setdefault(tuple(values[k] for k in keys), []).append(abs(row.error))
    return dict(sorted(out.items()))


def _stats(errors: list[float] | None) -> str:
    if not errors:
        return "- | -"
    return f"{statistics.fmean(errors):.1%} | {max(errors):.1%}"


def tp_scaling(table: list[Row]) -> list[tuple[str, str, str, str, tuple[int, int], float, float]]:
    """(source, figure, model, GPU, (smallest, largest TP), measured ratio, predicted ratio) for every
    source that measured one model on one GPU under one load at several tensor-parallel sizes."""
    groups: dict[tuple[str, str, str, str, int, int, int], list[Row]] = {}
    for row in table:
        u = row.record.use
        if row.predicted is None or "tp" not in u or row.kind not in ("decode", "aggregate"):
            continue
        key = (
            row.record.source,
            row.figure,
            u.get("config") or u["model"],
            u["gpu"],
            row.record.concurrency,
            u.get("prompt_tokens") or 0,
            u.get("output_tokens") or 0,
        )
        groups.setdefault(key, []).append(row)
    out = []
    for (source, figure, model, gpu, concurrency, *_), members in groups.items():
        tps = sorted({int(r.record.use["tp"]) for r in members})
        if len(tps) < 2:
            continue
        lo = next(r for r in members if r.record.use["tp"] == tps[0])
        hi = next(r for r in members if r.record.use["tp"] == tps[-1])
        assert lo.predicted and hi.predicted
        out.append(
            (
                source,
                f"{figure} c={concurrency}",
                model,
                gpu,
                (tps[0], tps[-1]),
                hi.measured / lo.measured,
                hi.predicted / lo.predicted,
            )
        )
    return out


def print_validation(loso: list[Row], in_sample: list[Row]) -> None:
    """The leave-one-source-out report (bench/VALIDATION.md): mean and worst absolute error by
    engine, dense vs MoE, concurrency band and metric, beside the in-sample error of the published fit
    on the same figures (calibration records only: the holdout set has no in-sample figure)."""
    held = {(row.record.id, row.figure): row for row in in_sample if row.record.set == "calibration"}
    n_sources = len(sources())
    print(
        f"{len(loso)} figures from {len(load_records())} records, {n_sources} sources; every figure counted "
        "(known misses included); error = predicted / measured - 1, absolute."
    )
    print()
    for keys in (
        ("metric",),
        ("engine", "metric"),
        ("engine", "arch", "metric"),
        ("engine", "band", "metric"),
    ):
        groups = validation_groups(loso, keys)
        fitted = validation_groups(
            [held[(r.record.id, r.figure)] for r in loso if (r.record.id, r.figure) in held], keys
        )
        claimed = validation_groups(loso, keys, misses=False)
        title = " | ".join(keys)
        print(
            f"| {title} | figures | LOSO mean | LOSO worst | without known misses | mean | worst "
            "| in-sample figures | in-sample mean | worst |"
        )
        print("|" + "---|" * len(keys) + "---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for key, errors in groups.items():
            ins, own = fitted.get(key), claimed.get(key)
            print(
                f"| {' | '.join(key)} | {len(errors)} | {_stats(errors)} | {len(own or [])} | {_stats(own)} "
                f"| {len(ins or [])} | {_stats(ins)} |"
            )
        print()
    calibration = [r for r in loso if (r.record.id, r.figure) in held]
    print("Calibration-set figures only, the same figures both ways:")
    print()
    print("| metric | figures | in-sample mean | worst | LOSO mean | LOSO worst |")
    print("|---|---:|---:|---:|---:|---:|")
    ins_metric = validation_groups([held[(r.record.id, r.figure)] for r in calibration], ("metric",))
    for key, errors in validation_groups(calibration, ("metric",)).items():
        print(f"| {key[0]} | {len(errors)} | {_stats(ins_metric.get(key))} | {_stats(errors)} |")
    print()
    print("The issue's targets, leave one source out:")
    print()
    print("| target | figures | LOSO mean | LOSO worst | without known misses | mean | worst | limit |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, metric, low, limit in TARGET_ROWS:
        picked = [r for r in loso if r.error is not None and r.kind == metric and r.record.concurrency >= low]
        errors = [abs(r.error or 0.0) for r in picked]
        own = [abs(r.error or 0.0) for r in picked if r.figure not in r.record.known_miss]
        print(f"| {label} | {len(errors)} | {_stats(errors)} | {len(own)} | {_stats(own)} | {limit:.0%} |")
    for misses, label in ((True, "every figure"), (False, "without known misses")):
        groups3 = validation_groups(loso, ("engine", "arch", "band"), misses)
        worse = {k: v for k, v in groups3.items() if statistics.fmean(v) > 0.30}
        print()
        print(
            f"Groups (engine x dense/MoE x concurrency band) above 30% mean, {label}: "
            f"{len(worse)} of {len(groups3)}"
        )
        print()
        for key, errors in worse.items():
            print(
                f"- {' / '.join(key)}: {len(errors)} figures, "
                f"{_stats(errors).replace(' | ', ' mean, worst ')}"
            )
    print_ranges(loso)
    print()
    print("Tensor-parallel scaling (one source, same model, GPU and load at several TP sizes):")
    print()
    print("| source | model | GPU | figure | TP | measured ratio | predicted ratio | difference |")
    print("|---|---|---|---|---|---:|---:|---:|")
    for source, figure, model, gpu, (lo, hi), measured, predicted in tp_scaling(loso):
        short = source.removeprefix("https://github.com/")
        print(
            f"| [{short[:40]}]({source}) | {model} | {gpu} | {figure} | {lo} -> {hi} | {measured:.2f} "
            f"| {predicted:.2f} | {(predicted - measured) * 100:+.0f} points |"
        )
    print()
    print("| source | records | refitted | figures | LOSO mean | LOSO worst |")
    print("|---|---:|---|---:|---:|---:|")
    by_source: dict[str, list[float]] = {}
    for row in loso:
        if row.error is not None:
            by_source.setdefault(row.record.source, []).append(abs(row.error))
    for source, recs in sources().items():
        engines = fold_engines(recs)
        refit = ", ".join(sorted(engines)) if engines else "no (never fitted on)"
        errors = by_source.get(source, [])
        short = source.removeprefix("https://github.com/")
        print(f"| [{short[:70]}]({source}) | {len(recs)} | {refit} | {len(errors)} | {_stats(errors)} |")


# --------------------------------------------------------------------------- printed ranges

#: The leave-one-source-out result of the last `--loso --write-ranges` run: every figure, measured and
#: predicted out of sample, with its group; gpusize/serving/speed_ranges.py is derived from it
#: (`ranges_table`), and tests/serving/test_speed_ranges.py recomputes the table from this file.
LOSO_RESULTS = ROOT / "bench" / "results" / "loso.json"
RANGES_MODULE = ROOT / "gpusize" / "serving" / "speed_ranges.py"


def loso_result_rows(loso: list[Row]) -> list[dict[str, Any]]:
    """The rows of LOSO_RESULTS: one per figure with a prediction, keyed by its group."""
    out = []
    for row in loso:
        if row.predicted is None:
            continue
        r = row.record
        out.append(
            {
                "record": r.id,
                "source": r.source,
                "set": r.set,
                "figure": row.figure,
                "engine": r.group,
                "arch": record_arch(r),
                "gpu_architecture": load.architecture_family(scenario(r.id).gpu),
                "band": band(r.concurrency),
                "metric": row.kind,
                "known_miss": row.figure in r.known_miss,
                "measured": row.measured,
                "predicted": row.predicted,
            }
        )
    return out


def write_loso_results(loso: list[Row], path: Path = LOSO_RESULTS) -> None:
    import datetime
    import json

    document = {
        "generated": datetime.date.today().isoformat(),
        "command": "python bench/calibrate_throughput.py --loso --write-ranges",
        "rows": loso_result_rows(loso),
    }
    path.write_text(json.dumps(document, indent=1) + "\n")


def rows_from_results(path: Path = LOSO_RESULTS) -> list[Row]:
    """The Rows of a recorded LOSO run (no refit): each record by id, its out-of-sample prediction."""
    import json

    by_id = {r.id: r for r in load_records()}
    data = json.loads(path.read_text())
    return [Row(by_id[d["record"]], d["figure"], d["measured"], d["predicted"]) for d in data["rows"]]


def print_ranges(loso: list[Row]) -> None:
    """The ranges answers print, per group (gpusize/serving/speed_ranges.py as `--write-ranges`
    writes it from this run), and what an answer in each group shows (`load.speed_range`)."""
    table = ranges_table(loso_result_rows(loso))
    saved = speed_ranges.RANGES
    speed_ranges.RANGES = table  # the lookup on this run's table, whatever the module on disk holds
    try:
        print()
        print(
            "Ranges printed with the answers (`--write-ranges`: gpusize/serving/speed_ranges.py): "
            "measured / predicted, every figure counted, 10th-90th percentile (8 in 10) per group; "
            f"a group with fewer than {load.MIN_RANGE_FIGURES} figures prints its engine's range "
            "widened to hold them, an engine with fewer prints none (not calibrated):"
        )
        print()
        print("| engine | arch | band | metric | figures | mean error | 8 in 10 within | an answer prints |")
        print("|---|---|---|---|---:|---:|---|---|")
        for (engine, arch, where, metric), (n, error, low, high) in table.items():
            if arch == "*":
                continue
            name, _, vendor = engine.partition("/")
            at = next(lo for lo, _, b in load.BANDS if b == where)
            got = load.speed_range(name, vendor or "NVIDIA", arch, at, metric)
            shown = "its own" if got.basis == "group" else "not calibrated"
            if got.basis == "engine":
                shown = f"{got.low:g}-{got.high:g}x (engine's, widened)"
            flag = " (above 30%)" if error > load.WIDE_GROUP_ERROR else ""
            cells = (engine, arch, where, metric, str(n), f"{error:.1%}{flag}", f"{low:g}-{high:g}x", shown)
            print(f"| {' | '.join(cells)} |")
    finally:
        speed_ranges.RANGES = saved


#: Figures that are times (a smaller value is faster); the others are rates.
TIME_FIGURES = ("ttft_ms", "end_to_end_latency_s")


def range_multiplier(row: dict[str, Any]) -> float:
    """measured / predicted of one LOSO result row, in the unit of what its metric prints: a rate
    (tok/s) for decode and aggregate, a time for ttft; so an estimate x the multiplier is the
    measurement (a prefill rate under "ttft", or a latency under "aggregate", is inverted)."""
    ratio = float(row["measured"]) / float(row["predicted"])
    is_time = row["figure"] in TIME_FIGURES
    return 1 / ratio if is_time != (row["metric"] == "ttft") else ratio


#: The metrics answers print ranges for (`load.METRIC_WORDS`); the TTFT spread classes are not.
RANGED_METRICS = ("decode", "aggregate", "ttft")


def ranges_table(
    result_rows: list[dict[str, Any]],
) -> dict[tuple[str, str, str, str], tuple[int, float, float, float]]:
    """(engine, arch, band, metric) -> (figures, mean |predicted / measured - 1|, low, high) over the
    LOSO result rows, every figure counted (known misses included): low / high are the 10th / 90th
    percentiles of `range_multiplier` (inclusive method), rounded outwards to 2 decimals, the
    interval that holds 8 in 10 of the group's out-of-sample figures. Rows with arch and band "*"
    pool all of an engine's figures of the metric."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for row in result_rows:
        if row["metric"] not in RANGED_METRICS:  # the TTFT spread figures: reported, not ranged
            continue
        for key in (
            (row["engine"], row["arch"], row["band"], row["metric"]),
            (row["engine"], "*", "*", row["metric"]),
        ):
            groups.setdefault(key, []).append(row)
    out = {}
    for key, members in sorted(groups.items()):
        ratios = [range_multiplier(r) for r in members]
        errors = [abs(float(r["predicted"]) / float(r["measured"]) - 1) for r in members]
        if len(ratios) > 1:
            deciles = statistics.quantiles(ratios, n=10, method="inclusive")
            low, high = deciles[0], deciles[-1]
        else:
            low = high = ratios[0]
        out[key] = (
            len(members),
            round(statistics.fmean(errors), 3),
            math.floor(low * 100) / 100,
            math.ceil(high * 100) / 100,
        )
    return out


def _inherited_from(group: str) -> list[str]:
    """The groups whose fitted constants `group` starts from (`INHERITORS`: SGLang and Transformers
    run vLLM's kernels; "sglang/AMD" vLLM's ROCm ones), itself first."""
    engine, slash, rest = group.partition("/")
    bases = [base for base, heirs in INHERITORS.items() if engine in heirs]
    return [group] + [base + slash + rest for base in bases]


def fitted_architectures(result_rows: list[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """group -> the GPU architectures (`load.architecture_family`) of the calibration records its
    constants were fitted on: its own and those of the groups it inherits from (`_inherited_from`),
    for every group with a figure."""
    fitted: dict[str, set[str]] = {}
    for row in result_rows:
        if row["set"] == "calibration":
            fitted.setdefault(row["engine"], set()).add(row["gpu_architecture"])
    groups = sorted({row["engine"] for row in result_rows})
    return {
        group: tuple(sorted(set().union(*(fitted.get(g, set()) for g in _inherited_from(group)))))
        for group in groups
    }


def outside_table(
    result_rows: list[dict[str, Any]],
) -> dict[tuple[str, str], tuple[int, float, float, float]]:
    """(group | "*", metric) -> (figures, mean error, low, high) as `ranges_table` computes them, over
    the figures on GPU architectures outside their group's fit (`fitted_architectures`); "*" pools
    every group's."""
    fitted = fitted_architectures(result_rows)
    outside = [
        {**row, "band": "*", "arch": row["engine"]}
        for row in result_rows
        if row["gpu_architecture"] not in fitted[row["engine"]]
    ]
    table = ranges_table([{**row, "engine": "outside"} for row in outside])
    by_group = ranges_table(outside)
    out = {("*", metric): value for (_, arch, _, metric), value in table.items() if arch == "*"}
    out.update(
        {
            (arch, metric): value
            for (_, arch, where, metric), value in by_group.items()
            if where == "*" and arch != "*"
        }
    )
    return dict(sorted(out.items()))


def ranges_module(document: dict[str, Any]) -> str:
    """The text of gpusize/serving/speed_ranges.py for a LOSO result document (as ruff formats it)."""
    import json

    table = ranges_table(document["rows"])
    lines = [
        '"""The ranges printed with gpusize\'s speed estimates, out of sample by source (generated data).',
        "",
        "GENERATED by `python bench/calibrate_throughput.py --loso --write-ranges` (do not edit; rerun",
        "it after any change to the speed model or its constants): every published figure of",
        "tests/data/throughput_records.yaml predicted by a fit that never saw its source (leave one source",
        'out, bench/VALIDATION.md), recorded in bench/results/loso.json, grouped by engine ("/AMD": the',
        "ROCm builds), dense or MoE, concurrency band (sequences in flight per engine instance) and",
        "metric (decode: one sequence; aggregate: tok/s under load, per request or in total; ttft). Every",
        "figure is counted, the known misses included. `gpusize.serving.load.speed_range` picks an",
        "answer's group.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        '__all__ = ["FITTED_ARCHITECTURES", "GENERATED", "OUTSIDE", "RANGES"]',
        "",
        "#: The date of the LOSO run the ranges come from.",
        f"GENERATED = {json.dumps(document['generated'])}",
        "",
        "#: (engine, arch, band, metric) -> (figures, mean |predicted / measured - 1|, low, high): low and",
        "#: high multiply an estimate (for ttft, a time) to give the interval that holds 8 in 10 of the",
        "#: group's measured / predicted ratios (10th and 90th percentiles, rounded outwards). Arch and",
        '#: band "*": all of the engine\'s figures of the metric, pooled.',
        "RANGES: dict[tuple[str, str, str, str], tuple[int, float, float, float]] = {",
    ]
    lines += [f"    ({', '.join(json.dumps(k) for k in key)}): {value!r}," for key, value in table.items()]
    lines += [
        "}",
        "",
        "#: engine group -> the GPU architectures (`load.architecture_family`) of the calibration records",
        "#: its constants were fitted on (its own and those of the groups whose constants it starts from:",
        "#: SGLang and Transformers run vLLM's kernels).",
        "FITTED_ARCHITECTURES: dict[str, tuple[str, ...]] = {",
    ]
    for group, archs in fitted_architectures(document["rows"]).items():
        named = ", ".join(json.dumps(a) for a in archs) + ("," if len(archs) == 1 else "")
        lines.append(f"    {json.dumps(group)}: ({named}),")
    lines += [
        "}",
        "",
        "#: (engine group, metric) -> (figures, mean error, low, high) as RANGES, over the figures on GPU",
        "#: architectures outside their group's fit (FITTED_ARCHITECTURES); group \"*\": every group's",
        "#: pooled. An estimate on a GPU outside its engine's fit prints its range widened to hold these.",
        "OUTSIDE: dict[tuple[str, str], tuple[int, float, float, float]] = {",
    ]
    lines += [
        f"    ({', '.join(json.dumps(k) for k in key)}): {value!r},"
        for key, value in outside_table(document["rows"]).items()
    ]
    lines += ["}", ""]
    return "\n".join(lines)


def write_ranges(path: Path = LOSO_RESULTS, module: Path = RANGES_MODULE) -> None:
    import json

    module.write_text(ranges_module(json.loads(path.read_text())))


if __name__ == "__main__":
    if "--decode-16" in sys.argv:
        DECODE_SEQUENCES = 16
    if "--moe-kernel" in sys.argv:
        use_moe_kernel()
    if "--expert-bytes" in sys.argv or "--expert-bytes-floor" in sys.argv:
        use_expert_bytes(keep_floor="--expert-bytes-floor" in sys.argv)
    if "--moe-config" in sys.argv:
        use_moe_config()
    if "--expert-blocks" in sys.argv or "--expert-blocks-pinned" in sys.argv:
        use_expert_blocks(pinned="--expert-blocks-pinned" in sys.argv)
    if "--expert-size" in sys.argv:
        use_expert_size()
    if "--decode-16" in sys.argv and not any(
        flag in sys.argv
        for flag in ("--expert-size", "--expert-bytes", "--expert-bytes-floor", "--expert-blocks")
    ):
        print("# refitting with the decode stage up to 16 sequences", file=sys.stderr)
        for name, value in fit().items():
            print(f"# {name} = {rounded(value)}", file=sys.stderr)
    if "--per-expert" in sys.argv or "--layer-kernels-expert" in sys.argv:
        use_per_expert(keep_kernels="--layer-kernels-expert" in sys.argv)
    if "--nccl-pcie" in sys.argv:
        use_nccl_pcie()
    if "--fit" in sys.argv:
        for name, value in fit().items():
            print(f"{name} = {rounded(value)!r}")
        print()
    table = rows()
    if "--loso" in sys.argv:
        loso = rows_from_results() if "--from-results" in sys.argv else leave_one_source_out_rows()
        if "--write-ranges" in sys.argv and "--from-results" not in sys.argv:
            write_loso_results(loso)
        if "--write-ranges" in sys.argv:
            write_ranges()
        print_validation(loso, table)
        sys.exit(0)
    print_table(table)
