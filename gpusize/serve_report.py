"""The serving report: layouts compared, the recommendation, launch commands, power (pure)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, ConfigDict

from gpusize import __version__, economics, engines, launch, memory, plan, serving, throughput
from gpusize.catalog import GpuSpec
from gpusize.model import ModelSpec
from gpusize.params import ParamCounts
from gpusize.report import ModelInfo, Origin, model_info


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LayoutInfo(_Out):
    replicas: int
    tensor_parallel: int
    fits: bool
    reason: str | None
    kv_cache_capacity_tokens: int | None
    max_concurrency: float | None
    capacity_sequences: int
    concurrent_sequences: int
    serves_all: bool
    per_request_tokens_per_s: float | None
    aggregate_tokens_per_s: float | None
    ttft_s: float | None
    bound: str | None
    headroom_bytes: int | None
    one_gpu_failure: str
    cost_per_hour: float | None
    cost_per_month: float | None
    cost_per_million_tokens: float | None


class ServeWorkload(_Out):
    mode: str
    context_tokens: int
    users: int | None
    rps: float | None
    prompt_tokens: int
    output_tokens: int
    weight_dtype: str
    kv_cache_dtype: str
    engine: str
    engine_version: str
    gpu_memory_utilization: float


class PowerInfo(_Out):
    gpu_tdp_w: float
    total_w_low: float
    total_w_high: float
    psu_capacity_w: float
    psu_layout: str
    pcie_lanes: int
    interconnect: str
    notes: list[str]


class ServeReport(_Out):
    gpusize_version: str
    fits: bool
    model: ModelInfo
    workload: ServeWorkload
    gpu: str
    gpu_full_name: str
    num_gpus: int
    layouts: list[LayoutInfo]
    recommendation: LayoutInfo | None
    why: str
    launch: dict[str, str]
    power: PowerInfo | None
    assumptions: dict[str, Any]


def _power(gpu: GpuSpec, n: int, tp_max: int) -> PowerInfo | None:
    if not gpu.tdp_w:
        return None
    p = economics.power_plan(gpu.tdp_w, n)
    notes = []
    if tp_max > 1 and gpu.interconnect == "pcie":
        notes.append(
            f"{gpu.name} has no NVLink: tensor parallel runs over PCIe and scales poorly "
            f"(seed 004); prefer replicas when the model fits one GPU"
        )
    if gpu.interconnect == "bridge-pairs" and n > 2:
        notes.append("NVLink bridges join pairs only: TP across more than 2 GPUs uses PCIe")
    if gpu.mig_instances:
        notes.append(f"MIG: up to {gpu.mig_instances} isolated instances per GPU for small models")
    return PowerInfo(
        gpu_tdp_w=p.gpu_w,
        total_w_low=p.total_w_low,
        total_w_high=p.total_w_high,
        psu_capacity_w=p.psu_capacity_w,
        psu_layout=p.layout,
        pcie_lanes=economics.pcie_lanes(n),
        interconnect=gpu.interconnect,
        notes=notes,
    )


def build_serve_report(
    origin: Origin,
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: GpuSpec,
    num_gpus: int,
    work: plan.Workload,
    demand: serving.Demand,
) -> ServeReport:
    layouts = serving.compare(spec, counts, gpu, num_gpus, work, demand)
    pick, why = serving.recommend(layouts)
    weight = plan.weight_format_for(spec, counts, work).name
    kv = memory.activation_dtype(spec) if work.kv_dtype == "auto" else work.kv_dtype
    commands: dict[str, str] = {}
    if pick:
        tp = pick.tensor_parallel
        commands["vllm"] = launch.vllm_command(
            origin.id, tp, demand.context, work.gpu_memory_utilization, work.kv_dtype, work.weight_dtype
        )
        commands["sglang"] = launch.sglang_command(
            origin.id, tp, demand.context, engines.sglang_defaults(gpu, tp).mem_fraction_static, work.kv_dtype
        )
        if origin.gguf is not None:
            commands["llamacpp"] = launch.llamacpp_command(origin.id, demand.context, len(spec.layers) + 1)
        if pick.replicas > 1:
            commands["replicas"] = (
                f"run {pick.replicas} copies, one per GPU group (CUDA_VISIBLE_DEVICES), "
                f"behind a load balancer"
            )
    return ServeReport(
        gpusize_version=__version__,
        fits=pick is not None,
        model=model_info(origin, spec, counts),
        workload=ServeWorkload(
            mode="serving",
            context_tokens=demand.context,
            users=demand.users,
            rps=demand.rps,
            prompt_tokens=demand.prompt_tokens,
            output_tokens=demand.output_tokens,
            weight_dtype=weight,
            kv_cache_dtype=kv,
            engine=work.engine,
            engine_version=engines.ENGINE_VERSIONS[work.engine],
            gpu_memory_utilization=work.gpu_memory_utilization,
        ),
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=num_gpus,
        layouts=[LayoutInfo(**asdict(x)) for x in layouts],
        recommendation=LayoutInfo(**asdict(pick)) if pick else None,
        why=why,
        launch=commands,
        power=_power(gpu, num_gpus, max(x.tensor_parallel for x in layouts)),
        assumptions={
            "engine": engines.ENGINE_VERSIONS[work.engine],
            "throughput": (
                f"estimates: bandwidth roofline at {throughput.BANDWIDTH_EFFICIENCY:.0%} of peak, "
                f"compute at {throughput.DECODE_MFU:.0%} of dense BF16 peak, ring all-reduce "
                f"over {throughput.link(gpu)[0]}; sequences hold half the context on average "
                f"(prompt + half the output with --rps); capacity counts full-context sequences"
            ),
            "load": "spread evenly over replicas; rps converted to sequences in flight by Little's law",
            "prices": "indicative cloud USD per GPU-hour, snapshot dated 2026-04-10; not a quote",
            "month_hours": economics.HOURS_PER_MONTH,
        },
    )
