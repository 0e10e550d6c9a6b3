"""The quote report (pure): ranked options, the top option's curve and topology, assumptions."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field

from gpusize import __version__
from gpusize.core.engines import engine_label, on_gpu
from gpusize.core.gpu import GpuSpec
from gpusize.core.model import ResolvedModel
from gpusize.core.network import NodePlan
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass, replace
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
from gpusize.serving import economics, throughput
from gpusize.serving.dp_alternative import dp_attention_layout, dp_attention_words
from gpusize.serving.layouts import Demand, evaluate_layout, prefix_note
from gpusize.serving.quote import (
    DEFAULT_TRAFFIC,
    RANKING,
    CurvePoint,
    Option,
    Plans,
    Targets,
    concurrency_curve,
    fleet,
    for_load,
    option_for,
    rank,
    with_money,
)
from gpusize.serving.topology import topology_mermaid, topology_text

__all__ = ["QuoteAssumptions", "QuoteReport", "build_quote"]


@dataclass(frozen=True, kw_only=True)
class QuoteAssumptions:
    """What a quote assumed: the engine, the ranking key, the speed targets, layout and throughput
    models, and prices."""

    engine: str
    ranking: str
    #: Each user's decode speed floor (tokens/s) and longest time to first token (s; None: any).
    min_tokens_per_s_per_user: float
    max_ttft_s: float | None
    layout: str
    throughput: str
    prices: str
    power: str
    #: Hours a month the servers would be rented, for buy versus rent (730 = every hour).
    utilization_hours: float
    buy_vs_rent: str
    #: The GPUs shown that come from a user catalog file (none: all bundled).
    gpu_files: tuple[GpuFile, ...] = field(metadata=NOT_IN_SHEETS)
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class QuoteReport:
    """The answer of `quote`: each GPU type's option for the load, ranked (its `--json`)."""

    gpusize_version: str
    command: str
    fits: bool
    model: ModelFacts
    workload: Workload
    users: int | None
    #: Fraction of each prompt's tokens served by the engine's prefix cache (--prefix-hit-rate).
    prefix_hit_rate: float
    #: Each request's prompt and output tokens (--prompt-tokens, --output-tokens).
    prompt_tokens: int
    output_tokens: int
    options: tuple[Option, ...]
    recommendation: Option | None
    curve: tuple[CurvePoint, ...]
    topology_text: str | None
    topology_mermaid: str | None
    assumptions: QuoteAssumptions
    #: --disaggregate: each option that fits carries its best prefill/decode split (`disaggregated`).
    disaggregated: bool = False


def build_quote(
    resolved: ResolvedModel,
    spec: ModelSpec,
    gpus: list[GpuSpec],
    work: Workload,
    users: int | None,
    hours: float = economics.HOURS_PER_MONTH,
    max_gpus: dict[str, int] | None = None,
    traffic: Demand = DEFAULT_TRAFFIC,
    targets: Targets | None = None,
    nodes: dict[str, NodePlan] | None = None,
    disaggregate: bool = False,
) -> QuoteReport:
    """`max_gpus`: the most GPUs an option of that GPU name may use (--gpu local: the machine's).
    `traffic`: each request's prompt and output tokens and prefix hit rate (its `users` unused).
    `nodes`: per GPU name, the servers of a multi-node option and their link (quote --nodes): each
    option is then those servers laid out as `serve --nodes` recommends. `disaggregate`: each option
    that fits also gets the best prefill/decode split of its GPUs (`_with_split`), beside it; the
    ranking stays the aggregated options'."""
    limits = max_gpus or {}
    aim = targets or Targets()
    prefix_hit_rate = traffic.prefix_hit_rate
    plans: Plans = {}  # GPU types alike in all a plan reads are planned once (serving/plan_key.py)
    if nodes:
        from gpusize.serving.nodes import node_option  # noqa: PLC0415 - start-up: only quote --nodes

        sized = [
            (g, *_node_sets(node_option, spec, g, work, users, traffic, nodes[g.name], aim)) for g in gpus
        ]
        options = rank(
            [
                with_money(o, g, (sets if o.fits else None) if users else None, users, hours)
                for g, o, sets in sized
            ],
            per_user=bool(users),  # with --users: the price per user served, as a single-server quote
        )
    elif users:
        options = rank(
            [
                for_load(
                    spec,
                    g,
                    on_gpu(spec, g, work),
                    users,
                    hours,
                    limits.get(g.name, 8),
                    traffic,
                    aim,
                    plans,
                )
                for g in gpus
            ],
            per_user=True,
        )
    else:
        options = rank(
            [
                with_money(
                    option_for(
                        spec,
                        g,
                        on_gpu(spec, g, work),  # the KV dtype the engine's auto picks on this GPU
                        replace(traffic, users=1),
                        max_count=limits.get(g.name, 8),
                        targets=aim,
                        plans=plans,
                    ),
                    g,
                    None,
                    None,
                    hours,
                )
                for g in gpus
            ]
        )
    if disaggregate and users:
        options = [
            _with_split(o, spec, gpus, work, replace(traffic, users=users), aim, nodes) for o in options
        ]
    top = next((o for o in options if o.fits), None)
    a_plan = next(iter(nodes.values())) if nodes else None  # every GPU type's servers alike
    servers = a_plan.nodes if a_plan else 1
    curve: list[CurvePoint] = []
    if top and top.nodes == 1:  # the curve is one server's; a multi-node option has none
        gpu = next(g for g in gpus if g.name == top.gpu)
        curve = concurrency_curve(spec, gpu, top.tensor_parallel, work)
    share = (
        f"{hours / economics.HOURS_PER_MONTH:.0%} of the hours"
        if hours < economics.HOURS_PER_MONTH
        else "every hour"
    )
    return QuoteReport(
        gpusize_version=__version__,
        command="quote",
        fits=top is not None,
        model=model_facts(resolved, spec),
        workload=work,
        users=users,
        prefix_hit_rate=prefix_hit_rate,
        prompt_tokens=traffic.prompt_tokens,
        output_tokens=traffic.output_tokens,
        options=tuple(options),
        recommendation=top,
        curve=tuple(curve),
        topology_text=topology_text(top) if top else None,
        topology_mermaid=topology_mermaid(top) if top else None,
        disaggregated=disaggregate and bool(users),
        assumptions=QuoteAssumptions(
            engine=engine_label(work.engine),
            ranking=_ranking(users, aim, servers),
            min_tokens_per_s_per_user=aim.min_tokens_per_s_per_user,
            max_ttft_s=aim.max_ttft_s,
            layout=f"each option is {servers} servers of {a_plan.gpus_per_node} GPUs, laid out as "
            "`serve --nodes` recommends"
            if a_plan
            else "each option is the smallest server of its GPU type (1, 2, 4 or 8 GPUs) that holds every "
            "user at once, else 8 GPUs, laid out as `serve` recommends"
            + (
                "; when one server cannot hold the load, as many as can, each sized for its share"
                if users
                else ""
            ),
            throughput=throughput.assumptions(spec, gpus[0], work)
            + ("; other GPUs alike" if len(gpus) > 1 else "")
            + prefix_note(work, prefix_hit_rate),
            prices=price_note(gpus)
            + (
                f"; month = 730 h; $/hour, $/month and tok/s are per set of {servers} servers, power per "
                "server"
                if servers > 1
                else "; month = 730 h; $/hour, $/month, power and tok/s are per server"
            ),
            power="GPU TDP sum + CPUs + platform, PSU with 20% margin",
            utilization_hours=hours,
            buy_vs_rent=f"the GPUs' purchase price (catalog, its kind and date per GPU; host, power and "
            f"operations not included) against renting {hours:,.0f} h a month ({share}), the rent shown "
            "for the same hours: break-even in months, for options that fit",
            gpu_files=gpu_files(gpus),
            notes=tuple(
                model_notes(resolved, spec, work)
                + gpu_file_notes(gpus)
                + device_notes(gpus, work.engine)
                + speed_range_notes(r for o in options if o.fits for r in o.speed_ranges)
                + throughput.unmodelled(work)
                + _dp_note(spec, gpus, work, top if not nodes else None, traffic, users)
                + [plan.words() for plan in (nodes or {}).values()][:1]
            ),
        ),
    )


def _dp_note(
    spec: ModelSpec,
    gpus: list[GpuSpec],
    work: Workload,
    top: Option | None,
    traffic: Demand,
    users: int | None,
) -> list[str]:
    """The recommended option's server with the engine's data-parallel attention, for MLA MoE models
    sized without it (serving/dp_alternative.py), each server sized for its share of the users; with
    --users, the servers that hold them all at once both ways (each server's capacity)."""
    if top is None or spec.mla is None or spec.moe is None:
        return []
    gpu = next(g for g in gpus if g.name == top.gpu)
    here = on_gpu(spec, gpu, work)
    servers = max(top.servers or 1, 1)
    share = replace(traffic, users=math.ceil((users or 1) / servers))
    plain = evaluate_layout(spec, gpu, top.replicas, top.tensor_parallel, here, share)
    found = dp_attention_layout(spec, gpu, here, share, plain)
    if found is None:
        return []
    other, flags, caveat = found
    fewer = ""
    if users and other.capacity_sequences > 0:
        dp_servers = math.ceil(users / other.capacity_sequences)
        if dp_servers < servers:  # each server then holds a larger share: evaluated at that share
            share = replace(traffic, users=math.ceil(users / dp_servers))
            other = dp_attention_layout(spec, gpu, here, share, plain)[0]  # type: ignore[index]
            fewer = f"; {dp_servers} server(s) hold the {users:,} users at once ({servers} without)"
    return [f"{top.num_gpus}x {top.gpu}: {dp_attention_words(plain, other, flags, caveat)}{fewer}"]


def _node_sets(
    node_option: Callable[..., Option],
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    users: int | None,
    traffic: Demand,
    plan: NodePlan,
    aim: Targets,
) -> tuple[Option, int]:
    """quote --nodes: the option of one set of the servers and, with --users, the fewest sets that
    hold every user at once, each with its share (as a single-server quote sizes its fleet:
    serving.quote.fleet)."""
    here = on_gpu(spec, gpu, work)

    def share(sets: int) -> Option:
        load = replace(traffic, users=math.ceil((users or 1) / sets))
        return node_option(spec, gpu, here, load, plan, aim)

    one = share(1)
    if not users or not (one.fits and not one.serves_all):
        return one, 1
    return fleet(one, users, share)


def _with_split(
    o: Option,
    spec: ModelSpec,
    gpus: list[GpuSpec],
    work: Workload,
    load: Demand,
    aim: Targets,
    nodes: dict[str, NodePlan] | None,
) -> Option:
    """`o` with the best prefill/decode split of its GPUs for its share of the load, compared with the
    aggregated layout `serve` recommends on the same GPUs (as `serve --disaggregate` does): its
    server's GPUs (2 when the option is one GPU, the least a split takes), or with --nodes all its
    servers' over their link."""
    if not o.fits:
        return o
    from gpusize.serving.disagg import disaggregate  # noqa: PLC0415 - start-up: only --disaggregate
    from gpusize.serving.layouts import compare, recommend  # noqa: PLC0415 - start-up: as above

    gpu = next(g for g in gpus if g.name == o.gpu)
    here = on_gpu(spec, gpu, work)
    share = replace(load, users=math.ceil((load.users or 1) / (o.servers or 1)))
    plan = (nodes or {}).get(o.gpu)
    if plan is not None:
        from gpusize.serving.nodes import node_layouts  # noqa: PLC0415 - start-up: only --nodes

        count = plan.nodes * plan.gpus_per_node
        layouts = node_layouts(spec, gpu, plan.nodes, here, share, plan.link, aim, plan.gpus_per_node)
    else:
        count = max(o.num_gpus, 2)
        layouts = compare(spec, gpu, count, here, share, targets=aim)
    pick, _ = recommend(layouts, aim)
    link, per_server = (plan.link, plan.gpus_per_node) if plan else (None, None)
    split = disaggregate(spec, gpu, count, here, share, pick, aim, link, per_server)
    return replace(o, disaggregated=split)


def _ranking(users: int | None, aim: Targets, servers: int = 1) -> str:
    """The ranking rule, as the footer and the JSON state it; `servers`: the servers of one option
    (quote --nodes), which are then sized in sets."""
    targets = f"per-user targets: {aim.words()}; "
    if users:
        unit = f"sets of {servers} servers" if servers > 1 else "servers"
        money = (
            f"lowest indicative price per user served, with as many {unit} as hold all {users:,} users at "
            "once"
        )
    else:
        money = "options holding every user at once, then those that queue; lowest indicative price per hour"
    return f"{targets}{RANKING}; within each, {money}; unpriced options, then those that do not fit, last"
