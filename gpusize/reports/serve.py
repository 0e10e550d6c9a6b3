"""The serving report (pure): layouts compared, the recommendation, launch commands and power."""

from __future__ import annotations

from dataclasses import field, replace

from gpusize import __version__
from gpusize.core.engines import engine, engine_label, on_gpu
from gpusize.core.gpu import GpuSpec
from gpusize.core.model import ResolvedModel
from gpusize.core.network import NodePlan
from gpusize.core.plan import TP_SIZES
from gpusize.core.spec import ModelSpec
from gpusize.core.suggest import Scope, Suggestion, fixes
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass
from gpusize.reports.common import (
    NOT_IN_SHEETS,
    GpuFile,
    ModelFacts,
    device_notes,
    gpu_file_notes,
    gpu_files,
    model_facts,
    price_note,
)
from gpusize.reports.fit import model_notes
from gpusize.reports.speed_notes import speed_range_notes
from gpusize.serving import calibrated, disagg, economics, throughput
from gpusize.serving.disagg import Disaggregated, disaggregate
from gpusize.serving.dp_alternative import dp_attention_alternative
from gpusize.serving.launch import (
    SERVER_COMMANDS,
    LaunchCommand,
    half_precision,
    llamacpp_command,
)
from gpusize.serving.layouts import Demand, Layout, compare, layout_name, prefix_note, recommend
from gpusize.serving.targets import Targets

__all__ = [
    "PowerInfo",
    "ServeAssumptions",
    "ServeReport",
    "build_serve_report",
    "launch_commands",
    "power_info",
    "sized_serve_report",
]


@dataclass(frozen=True, kw_only=True)
class PowerInfo:
    """The power of a serving plan: GPU TDP, the server's draw range and its power supplies; across
    `servers` servers (--nodes), one server's, each of them carrying its own."""

    gpu_tdp_w: float
    total_w_low: float
    total_w_high: float
    psu_capacity_w: float
    psu_layout: str
    pcie_lanes: int
    interconnect: str
    notes: tuple[str, ...]
    servers: int = 1


@dataclass(frozen=True, kw_only=True)
class ServeAssumptions:
    """What a serving plan assumed: the engine, the throughput and load models, prices and hours."""

    engine: str
    throughput: str
    load: str
    prices: str
    month_hours: float
    #: The GPU, when it comes from a user catalog file (none: bundled).
    gpu_files: tuple[GpuFile, ...] = field(metadata=NOT_IN_SHEETS)
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ServeReport:
    """The answer of `serve`: the layouts compared for the load and the one recommended (its `--json`)."""

    gpusize_version: str
    command: str
    #: A layout runs the model on these GPUs.
    fits: bool
    #: The recommended layout holds the whole load at once (no request waits for a slot); the exit
    #: status is 0 only then.
    serves_load: bool
    model: ModelFacts
    workload: Workload
    demand: Demand
    gpu: str
    gpu_full_name: str
    num_gpus: int
    #: What each user must get (--min-tokens-per-s-per-user, --max-ttft-s): the recommendation is the
    #: best layout that gives it, and says when none does.
    targets: Targets
    layouts: tuple[Layout, ...]
    recommendation: Layout | None
    why: str
    launch: dict[str, LaunchCommand]
    power: PowerInfo | None
    #: When no layout runs the model: configurations that do (core/suggest.py), each evaluated by the
    #: same engine model, cheapest first; empty otherwise.
    suggestions: tuple[Suggestion, ...]
    assumptions: ServeAssumptions
    #: Multi-node plans (--nodes): the servers, GPUs each and the link between them; None on one server.
    nodes: NodePlan | None = None
    #: --disaggregate: the best prefill/decode split of the same GPUs and its comparison; else None.
    disaggregated: Disaggregated | None = None


def power_info(
    gpu: GpuSpec, n: int, tp_max: int, one_gpu_fits: bool = True, servers: int = 1
) -> PowerInfo | None:
    """The power of `n` GPUs of this type on `servers` servers: one server's (n / servers GPUs)."""
    if not gpu.tdp_w:
        return None
    per_server = n // servers
    p = economics.power_plan(gpu.tdp_w, per_server)
    notes = []
    if tp_max > 1 and gpu.interconnect == "pcie":
        notes.append(
            f"{gpu.name} has no {gpu.terms.link}: tensor parallel runs over PCIe and scales poorly; "
            "prefer replicas when the model fits one GPU"
        )
    if gpu.interconnect == "bridge-pairs" and n > 2:
        notes.append("NVLink bridges join pairs only: TP across more than 2 GPUs uses PCIe")
    if gpu.mig_instances and one_gpu_fits:  # MIG slices one GPU: moot for a model that needs several
        notes.append(f"MIG: up to {gpu.mig_instances} isolated instances per GPU for small models")
    return PowerInfo(
        gpu_tdp_w=p.gpu_w,
        total_w_low=p.total_w_low,
        total_w_high=p.total_w_high,
        psu_capacity_w=p.psu_capacity_w,
        psu_layout=p.layout,
        pcie_lanes=economics.pcie_lanes(per_server),
        interconnect=gpu.interconnect,
        notes=tuple(notes),
        servers=servers,
    )


def sized_serve_report(
    resolved: ResolvedModel,
    spec: ModelSpec,
    work: Workload,
    demand: Demand,
    scope: Scope,
    host_gbps: float | None = None,
    targets: Targets | None = None,
) -> ServeReport:
    """`serve` without --gpus, as `fit` sizes: the smallest server of 1/2/4/8 GPUs (up to
    `scope.max_count`) that holds the whole load at once with its users getting the targets, else the
    smallest that holds the load, else the largest that runs the model (the most capacity; the load
    queues), else the largest tried with the configurations that fit."""
    gpu = scope.gpus[0]
    counts = [n for n in TP_SIZES if n <= scope.max_count]
    runs: list[ServeReport] = []
    for n in counts:
        report = build_serve_report(resolved, spec, gpu, n, work, demand, host_gbps, None, targets)
        if report.serves_load and report.recommendation and report.recommendation.meets_targets:
            return report
        if report.fits:
            runs.append(report)
    holding = [r for r in runs if r.serves_load]
    if holding:
        return holding[0]
    if runs:
        return runs[-1]
    return build_serve_report(resolved, spec, gpu, counts[-1], work, demand, host_gbps, scope, targets)


def launch_commands(
    resolved: ResolvedModel,
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    pick: Layout,
    nodes: NodePlan | None = None,
) -> dict[str, LaunchCommand]:
    """The commands that start one replica of the recommended layout, for the engine sized (and the
    other tensor-parallel engine, sized the same way); a replica across servers (`nodes`) with the
    flags of its parallelism (`serving.nodes.across_servers_words`), or a note where gpusize does
    not write that launch."""
    tp = pick.tensor_parallel
    model = engine(work.engine.name)
    out: dict[str, LaunchCommand] = {}
    own = SERVER_COMMANDS.get(model.name)
    if own is not None and model.budget is None:  # Ollama: its own command, no budget fraction
        gpus = pick.gpus_per_replica
        slots = max(
            1, min(pick.concurrent_sequences // max(pick.replicas, 1), int(pick.max_concurrency or 1))
        )
        if work.engine.num_parallel is None:  # the parallel slots the layout was sized with
            work = replace(work, engine=replace(work.engine, num_parallel=slots))
        out[model.name] = own(resolved.ollama_tag or resolved.engine_target, None, gpus, work, 1.0, spec, gpu)
        if pick.replicas > 1:
            out["replicas"] = LaunchCommand(
                None,
                f"run {pick.replicas} copies, one per group of {gpus} GPU(s) (CUDA_VISIBLE_DEVICES, "
                "OLLAMA_HOST on its own port), behind a load balancer",
            )
        return out
    if model.splits_layers or resolved.source == "gguf":
        ngl = len(spec.layers) + 1 if work.engine.n_gpu_layers is None else work.engine.n_gpu_layers
        slots = max(
            1, min(pick.concurrent_sequences // max(pick.replicas, 1), int(pick.max_concurrency or 1))
        )
        out["llamacpp"] = llamacpp_command(
            resolved.engine_target, resolved.source, work, ngl, slots, pick.gpus_per_replica, spec
        )
        if pick.replicas > 1:
            out["replicas"] = LaunchCommand(
                None,
                f"run {pick.replicas} copies, one per group of {pick.gpus_per_replica} GPU(s) "
                f"({gpu.terms.visible_devices}), behind a load balancer",
            )
        return out
    command = SERVER_COMMANDS.get(model.name)
    if command is not None and model.budget is not None:
        budget = model.budget(spec, gpu, tp, work)
        out[model.name] = command(resolved.engine_target, resolved.revision, tp, work, budget, spec, gpu)
        if nodes is not None and pick.gpus_per_replica > nodes.gpus_per_node:
            out[model.name] = _across_servers(out[model.name], model.name, model.label, pick)
    if pick.replicas > 1:
        out["replicas"] = LaunchCommand(
            None,
            f"run {pick.replicas} copies, one per group of {tp} GPU(s) ({gpu.terms.visible_devices}), "
            "behind a load balancer",
        )
    return out


def pd_launch(
    resolved: ResolvedModel, spec: ModelSpec, gpu: GpuSpec, work: Workload, split: Disaggregated | None
) -> dict[str, LaunchCommand]:
    """--disaggregate: the frontend and each pool's worker as NVIDIA Dynamo starts them, from the
    engine's own command at each pool's tensor parallel size and memory budget."""
    model = engine(work.engine.name)
    command = SERVER_COMMANDS.get(model.name)
    if split is None or command is None or model.budget is None:
        return {}
    own = {
        tp: command(
            resolved.engine_target, resolved.revision, tp, work, model.budget(spec, gpu, tp, work), spec, gpu
        )
        for tp in {split.prefill.tensor_parallel, split.decode.tensor_parallel}
    }
    from gpusize.serving.dynamo import dynamo_launch  # noqa: PLC0415 - start-up: --disaggregate only

    return dynamo_launch(
        model.name, work.engine_version, own[split.prefill.tensor_parallel], own[split.decode.tensor_parallel]
    )


def build_serve_report(
    resolved: ResolvedModel,
    spec: ModelSpec,
    gpu: GpuSpec,
    num_gpus: int,
    work: Workload,
    demand: Demand,
    host_gbps: float | None = None,
    scope: Scope | None = None,
    targets: Targets | None = None,
    nodes: NodePlan | None = None,
    disaggregated: bool = False,
) -> ServeReport:
    """The layouts of `num_gpus` GPUs for the demand; when none runs the model and `scope` says where
    to look, the configurations that do. `targets`: what each user must get (default the reading
    floor), by which the recommendation is chosen. `nodes`: the layouts of that many servers of its
    GPUs instead (serving/nodes.py), `num_gpus` being all their GPUs."""
    work = half_precision(work, gpu)  # T4 and other GPUs without bf16 run 16-bit models in fp16
    work = on_gpu(spec, gpu, work)  # the KV dtype the engine's auto picks on this GPU
    aim = targets or Targets()
    if nodes is not None:
        from gpusize.serving.nodes import node_layouts  # noqa: PLC0415 - start-up: only serve --nodes

        layouts = node_layouts(spec, gpu, nodes.nodes, work, demand, nodes.link, aim, nodes.gpus_per_node)
        num_gpus = nodes.nodes * nodes.gpus_per_node
    else:
        layouts = compare(spec, gpu, num_gpus, work, demand, targets=aim)
    pick, why = recommend(layouts, aim)
    split = (
        disaggregate(
            spec,
            gpu,
            num_gpus,
            work,
            demand,
            pick,
            aim,
            nodes.link if nodes else None,
            nodes.gpus_per_node if nodes else None,
        )
        if disaggregated
        else None
    )
    found = fixes(spec, work, engine(work.engine.name), scope) if pick is None and scope else ()
    one_gpu_fits = any(x.fits and x.gpus_per_replica == 1 for x in layouts)
    return ServeReport(
        gpusize_version=__version__,
        command="serve",
        fits=pick is not None,
        serves_load=pick is not None and pick.serves_all,
        model=model_facts(resolved, spec),
        workload=work,
        demand=demand,
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=num_gpus,
        targets=aim,
        layouts=tuple(layouts),
        recommendation=pick,
        why=why,
        launch=(
            launch_commands(resolved, spec, gpu, work, pick, nodes)
            | _node_launch(pick, nodes, work.engine.name)
            | pd_launch(resolved, spec, gpu, work, split)
        )
        if pick
        else {},
        power=power_info(
            gpu, num_gpus, max(x.tensor_parallel for x in layouts), one_gpu_fits, nodes.nodes if nodes else 1
        ),
        suggestions=found,
        assumptions=ServeAssumptions(
            engine=engine_label(work.engine),
            throughput=(
                f"{throughput.assumptions(spec, gpu, work)}; sequences hold half the context on average "
                "(prompt + half the output with --rps); capacity counts full-context sequences"
                + (
                    f"; layers in system RAM read at {host_gbps or calibrated.DEFAULT_HOST_GBPS:g} GB/s peak"
                    if engine(work.engine.name).splits_layers
                    else ""
                )
                + prefix_note(work, demand.prefix_hit_rate)
            ),
            load="spread evenly over replicas; with --rps, sequences in flight = requests per second x "
            "seconds per request (Little's law)",
            prices=price_note([gpu]),
            month_hours=economics.HOURS_PER_MONTH,
            gpu_files=gpu_files([gpu]),
            notes=tuple(
                model_notes(resolved, spec, work)
                + gpu_file_notes([gpu])
                + device_notes([gpu], work.engine)
                + speed_range_notes(
                    r for x in ([pick] if pick else []) + layouts if x.fits for r in x.speed_ranges
                )
                + throughput.unmodelled(work)
                + _listed(dp_attention_alternative(spec, gpu, work, demand, pick if nodes is None else None))
                + ([nodes.words()] if nodes else [])
                + (
                    ["--disaggregate: no split of these GPUs runs the model in a prefill and a decode pool"]
                    if disaggregated and split is None
                    else []
                )
                + (
                    [
                        "speed not calibrated for the disaggregated split: no range shown "
                        f"({disagg.CHECKED_WORDS})"
                    ]
                    if split is not None
                    else []
                )
            ),
        ),
        nodes=nodes,
        disaggregated=split,
    )


def _listed(line: str | None) -> list[str]:
    return [line] if line else []


def _across_servers(launch: LaunchCommand, name: str, label: str, pick: Layout) -> LaunchCommand:
    """One server's launch command of a replica that spans servers, with its parallelism's flags."""
    from gpusize.serving.nodes import across_servers_words  # noqa: PLC0415 - start-up: only serve --nodes

    if launch.command is None:
        return launch
    words = across_servers_words(name, pick)
    if words is None:
        how = engine(name).across_servers
        why = how.expert_why if how is not None and how.expert_why else "gpusize does not write it"
        return LaunchCommand(
            None, f"not written: {label} {why} ({layout_name(pick)} across servers)", launch.engine_version
        )
    return replace(launch, command=" ".join([launch.command, *words])) if words else launch


def _node_launch(pick: Layout, plan: NodePlan | None, engine_name: str) -> dict[str, LaunchCommand]:
    """`serving.nodes.node_launch`: nothing on one server, imported only for a plan across servers."""
    if plan is None:
        return {}
    from gpusize.serving.nodes import node_launch  # noqa: PLC0415 - start-up: only serve --nodes

    return node_launch(pick, plan, engine_name)
