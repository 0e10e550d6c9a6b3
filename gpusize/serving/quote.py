"""Quotes (pure): ranked server options for one model and the concurrency-vs-context curve. The numbers
come from the same engine models and serving functions as `fit` and `serve`, so one plan shows the same
figures in all three commands.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES, PerGpu, smallest_fit
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass, replace
from gpusize.serving import economics
from gpusize.serving.curve import CurvePoint, concurrency_curve
from gpusize.serving.layouts import Demand, Layout, compare, parallel_name, recommend, repriced
from gpusize.serving.load import SpeedRange
from gpusize.serving.plan_key import plan_key
from gpusize.serving.targets import READING_TOKENS_PER_S, Targets

if TYPE_CHECKING:
    from gpusize.serving.disagg import Disaggregated

__all__ = [
    "DEFAULT_QUOTE_GPUS",
    "DEFAULT_TRAFFIC",
    "READING_TOKENS_PER_S",
    "Targets",
    "CurvePoint",
    "Option",
    "Plans",
    "ServerPlan",
    "concurrency_curve",
    "fleet",
    "for_load",
    "RANKING",
    "memory_parts",
    "option_for",
    "option_from",
    "option_layout",
    "labeled",
    "plan_for",
    "rank",
    "with_money",
]

#: GPUs a quote compares when none are named: the datacenter and workstation staples buyers ask
#: about, one per class.
DEFAULT_QUOTE_GPUS = ("H200", "H100", "B200", "A100-80GB", "L40S", "RTX-PRO-6000", "RTX4090", "RTX5090")
#: What each request of a quote is when it is not said (--prompt-tokens, --output-tokens,
#: --prefix-hit-rate): serve's defaults, the users given per option.
DEFAULT_TRAFFIC = Demand()


@dataclass(frozen=True, kw_only=True)
class Option:
    """One server option of a quote: memory per GPU, capacity, speed, price and power per server."""

    gpu: str
    gpu_full_name: str
    num_gpus: int
    replicas: int
    tensor_parallel: int
    fits: bool
    reason: str | None
    weights_bytes: int | None  # per GPU
    kv_cache_bytes: int | None
    activations_bytes: int | None
    overhead_bytes: int | None
    usable_bytes: int | None
    headroom_bytes: int | None
    kv_cache_capacity_tokens: int | None  # per replica
    max_concurrency: float | None  # per replica
    capacity_sequences: int
    serves_all: bool
    #: Holds the load by less than the engine's error on public start-up logs (core/plan.thin_margin).
    thin_margin: bool
    per_request_tokens_per_s: float | None  # estimates, with their ranges
    per_request_tokens_per_s_low: float | None
    per_request_tokens_per_s_high: float | None
    aggregate_tokens_per_s: float | None
    aggregate_tokens_per_s_low: float | None
    aggregate_tokens_per_s_high: float | None
    ttft_s: float | None
    #: Where the ranges above come from (out of sample by source): serving/load.SpeedRange.
    speed_ranges: tuple[SpeedRange, ...] = field(default=(), metadata={"sheet": False})
    #: Each user gets the quote's Targets (speed floor, TTFT) on this option.
    meets_targets: bool
    usd_per_hour: float | None  # the whole server
    usd_per_month: float | None
    usd_per_million_tokens: float | None
    usd_per_million_tokens_low: float | None
    usd_per_million_tokens_high: float | None
    power_w: float | None
    psu: str | None
    interconnect: str
    #: The link tensor-parallel traffic crosses, as the vendor names it (GpuSpec.tp_link): for the text.
    link: str = field(default="PCIe", metadata={"json": False, "sheet": False})
    caveats: tuple[str, ...]
    #: Servers of this option that hold every user at once (--users), each with its share of the load.
    servers: int | None = None
    #: Indicative USD per hour for all those servers, and per user served.
    fleet_usd_per_hour: float | None = None
    usd_per_user_hour: float | None = None
    #: Buying the server's GPUs (the catalog's dated purchase price x GPUs; host, power and operations
    #: not included) against renting them for `hours` a month: the month renting has cost as much.
    purchase_usd: float | None = None
    purchase_price_date: str | None = None
    #: What the purchase price is (launch MSRP, street, used), from the catalog.
    purchase_price_kind: str | None = None
    #: Renting this server `hours` a month (the figure the break-even compares with the purchase).
    rent_usd_per_month: float | None = None
    #: None when the option does not fit or either price is missing.
    break_even_months: float | None = None
    #: Multi-node options (quote --nodes, serving/nodes.py): servers spanned, pipeline and expert
    #: parallel sizes, what crosses the link between servers (1 / 1 / 1 / None on one server).
    nodes: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    network: str | None = None
    #: The engine's data-parallel ranks inside one replica (`Layout.data_parallel`).
    data_parallel: int = 1
    #: quote --disaggregate: the best prefill/decode split of this option's server (of 2 GPUs when
    #: the option is one) for its share of the users, compared with the aggregated layout on the same
    #: GPUs (serving/disagg.py); None without the flag, or when no split runs the model.
    disaggregated: Disaggregated | None = field(default=None, metadata={"sheet": False})

    @property
    def gpus_per_server(self) -> int:
        """The GPUs of one server of the option (all of them on one server; with --nodes, a share)."""
        return self.num_gpus // max(self.nodes, 1)


def option_layout(o: Option) -> str:
    """The option's layout as serve names it (`layouts.parallel_name`: quote compares tensor-parallel
    engines only)."""
    return parallel_name(
        o.replicas, o.tensor_parallel, o.pipeline_parallel, o.expert_parallel, o.data_parallel
    )


def _caveats(gpu: GpuSpec, tp: int, option_visible_measured: bool) -> tuple[str, ...]:
    notes = []
    if tp > 1 and gpu.interconnect == "pcie":
        notes.append(f"tensor parallel over PCIe (no {gpu.terms.link}): expect poor scaling")
    if tp > 2 and gpu.interconnect == "bridge-pairs":
        notes.append("NVLink bridges pair GPUs only; TP>2 crosses PCIe")
    if not option_visible_measured:
        notes.append(f"{gpu.runtime}-visible memory estimated from the reported total")
    if gpu.price_usd_per_hour is None:
        notes.append("no indicative price in the catalog")
    if gpu.segment == "consumer":
        notes.append("consumer card: no ECC; GeForce EULA restricts datacenter use")
    return tuple(notes)


@dataclass(frozen=True, kw_only=True)
class ServerPlan:
    """One GPU type's server as `option_for` sizes it, before the GPU's name and prices label it as an
    Option: what GPU types with the same plan_key (serving/plan_key.py) share."""

    num_gpus: int
    layout: Layout
    #: Memory per GPU of the plan that runs it (None when none fits).
    per_gpu: PerGpu | None
    fits: bool
    reason: str | None

    @property
    def serves_all(self) -> bool:
        return self.layout.serves_all

    @property
    def capacity_sequences(self) -> int:
        return self.layout.capacity_sequences

    @property
    def thin_margin(self) -> bool:
        return self.fits and self.layout.thin_margin


#: Plans already made in one quote, by everything they depend on (`_kept`): GPU types alike in
#: what a plan reads are planned once.
Plans = dict[tuple[object, ...], Any]


def option_for(
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    demand: Demand,
    count: int | None = None,
    max_count: int = max(TP_SIZES),
    targets: Targets | None = None,
    plans: Plans | None = None,
) -> Option:
    """The smallest server of this GPU type that holds the whole demand (or, when none of 1/2/4/8
    does, the largest that runs the model), laid out as `serve` recommends; never more than
    `max_count` GPUs (this machine's, for --gpu local). `plans`: those of earlier GPU types of the
    same quote, shared by a GPU whose plan_key matches."""

    def make() -> ServerPlan:
        return plan_for(spec, gpu, work, demand, count, max_count, targets)

    if plans is None:
        return labeled(gpu, make())
    key = ("option", plan_key(gpu), spec, work, demand, count, max_count, targets)
    plan: ServerPlan = _kept(plans, key, make)
    return _label(plans, gpu, plan)


def _kept(plans: Plans, key: tuple[object, ...], make: Callable[[], Any]) -> Any:
    """The plan kept in `plans` under `key`, everything it depends on; made and kept on first use."""
    found = plans.get(key)
    if found is None:
        found = plans[key] = make()
    return found


def _label(plans: Plans, gpu: GpuSpec, plan: ServerPlan) -> Option:
    """`labeled(gpu, plan)`, made once per plan and price: labeled reads nothing of the GPU but its
    plan key, its name and its price, so a GPU type of the same plan and price gets that option under
    its own name (5,000 fields a quote over 1,000 copies of one card would build again)."""
    key = ("labeled", id(plan), gpu.price_usd_per_hour)  # the plan is kept in `plans`: its id stays its own
    option: Option = _kept(plans, key, lambda: labeled(gpu, plan))
    return option if option.gpu == gpu.name else replace(option, gpu=gpu.name)


def plan_for(
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    demand: Demand,
    count: int | None = None,
    max_count: int = max(TP_SIZES),
    targets: Targets | None = None,
) -> ServerPlan:
    """`option_for`'s server before its labels: the GPU count, the layout, the memory per GPU."""
    sizes = (count,) if count else tuple(n for n in TP_SIZES if n <= max_count) or (1,)
    model = engine(work.engine.name)
    # a MIG slice / unified-memory device holds one instance: more of them are replicas (below)
    tried = smallest_fit(spec, gpu, work, model.evaluate, (1,) if gpu.one_device else sizes)
    best = tried[-1]
    n = best.num_gpus
    aim = targets or Targets()
    layouts = compare(spec, gpu, n, work, demand, targets=aim)
    pick, _ = recommend(layouts, aim)
    for bigger in (s for s in sizes if s > n and best.fits and not (pick and pick.serves_all)):
        more = compare(spec, gpu, bigger, work, demand, targets=aim)
        more_pick, _ = recommend(more, aim)
        if more_pick is None:
            continue
        best = model.evaluate(spec, gpu, more_pick.gpus_per_replica, work)
        n, layouts, pick = bigger, more, more_pick
    layout = pick or next((x for x in layouts if x.gpus_per_replica == n), layouts[-1])
    fits = best.fits and pick is not None
    reason = best.reason or (None if pick else "no layout fits")
    return ServerPlan(
        num_gpus=n, layout=layout, per_gpu=best.per_gpu if best.fits else None, fits=fits, reason=reason
    )


def labeled(gpu: GpuSpec, plan: ServerPlan) -> Option:
    """The option of `plan` on this GPU type: its name, its prices and its caveats."""
    layout = repriced(plan.layout, gpu)
    caveats = _caveats(gpu, layout.tensor_parallel, gpu.visible_is_measured)
    return option_from(gpu, plan.num_gpus, layout, plan.per_gpu, plan.fits, plan.reason, caveats)


def option_from(
    gpu: GpuSpec,
    n: int,
    layout: Layout,
    g: PerGpu | None,
    fits: bool,
    reason: str | None,
    caveats: tuple[str, ...],
    **extra: Any,
) -> Option:
    """The option of `n` GPUs of this type laid out as `layout` (its speed, capacity and prices),
    with `g` the memory per GPU of the plan that runs it (None when none fits); `extra`: the fields
    a layout over several servers adds or overrides (serving/nodes.py): its `nodes` servers each
    carry their own power supplies, so power and PSU are one server's (n / nodes GPUs)."""
    servers = extra.get("nodes") or 1
    power = economics.power_plan(gpu.tdp_w, n // servers) if gpu.tdp_w else None
    fields: dict[str, Any] = dict(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=n,
        replicas=layout.replicas,
        tensor_parallel=layout.tensor_parallel,
        data_parallel=layout.data_parallel,
        fits=fits,
        reason=reason,
        weights_bytes=g.weights_bytes if g else None,
        kv_cache_bytes=layout.kv_cache_bytes if g else None,
        activations_bytes=g.activations_bytes if g else None,
        overhead_bytes=g.overhead_bytes if g else None,
        usable_bytes=g.usable_bytes if g else None,
        headroom_bytes=layout.headroom_bytes,
        kv_cache_capacity_tokens=layout.kv_cache_capacity_tokens,
        max_concurrency=layout.max_concurrency,
        capacity_sequences=layout.capacity_sequences,
        serves_all=layout.serves_all,
        thin_margin=fits and layout.thin_margin,
        per_request_tokens_per_s=layout.per_request_tokens_per_s,
        per_request_tokens_per_s_low=layout.per_request_tokens_per_s_low,
        per_request_tokens_per_s_high=layout.per_request_tokens_per_s_high,
        aggregate_tokens_per_s=layout.aggregate_tokens_per_s,
        aggregate_tokens_per_s_low=layout.aggregate_tokens_per_s_low,
        aggregate_tokens_per_s_high=layout.aggregate_tokens_per_s_high,
        ttft_s=layout.ttft_s,
        speed_ranges=layout.speed_ranges,
        meets_targets=fits and layout.meets_targets,
        usd_per_hour=layout.usd_per_hour,
        usd_per_month=layout.usd_per_month,
        usd_per_million_tokens=layout.usd_per_million_tokens,
        usd_per_million_tokens_low=layout.usd_per_million_tokens_low,
        usd_per_million_tokens_high=layout.usd_per_million_tokens_high,
        power_w=power.total_w_high if power else None,
        psu=power.layout if power else None,
        interconnect=gpu.interconnect,
        link=gpu.tp_link,
        caveats=caveats,
    )
    return Option(**{**fields, **extra})


def for_load(
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    users: int,
    hours: float = economics.HOURS_PER_MONTH,
    max_count: int = max(TP_SIZES),
    traffic: Demand = DEFAULT_TRAFFIC,
    targets: Targets | None = None,
    plans: Plans | None = None,
) -> Option:
    """The option of this GPU type for `users` concurrent users, each request as `traffic` says (its
    prompt and output tokens, prefix hit rate): one server when one holds them all,
    else as many servers of the largest size as hold every user at once, each sized and laid out for
    its share of the load (so its speed and $/1M tokens are those of that share); a server has at most
    `max_count` GPUs (--gpu local: the machine's). `plans`: as option_for's."""

    def make() -> tuple[ServerPlan, int]:
        return _fleet_plan(spec, gpu, work, users, max_count, traffic, targets)

    if plans is None:
        plan, servers = make()
        option = labeled(gpu, plan)
    else:
        key = ("load", plan_key(gpu), spec, work, users, max_count, traffic, targets)
        plan, servers = _kept(plans, key, make)
        option = _label(plans, gpu, plan)
    return with_money(option, gpu, servers if option.fits else None, users, hours)


def _fleet_plan(
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    users: int,
    max_count: int,
    traffic: Demand,
    targets: Targets | None,
) -> tuple[ServerPlan, int]:
    """for_load's server before its labels, and how many of it."""
    demand = replace(traffic, users=users)
    one = plan_for(spec, gpu, work, demand, max_count=max_count, targets=targets)
    if not (one.fits and not one.serves_all):
        return one, 1
    return fleet(one, users, lambda n: _share(spec, gpu, work, users, n, one, targets, traffic))


def _share(
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    users: int,
    servers: int,
    one: ServerPlan,
    targets: Targets | None,
    traffic: Demand,
) -> ServerPlan:
    """One server of a fleet of `servers`, sized and laid out for its share of `users`."""
    demand = replace(traffic, users=math.ceil(users / servers))
    return plan_for(spec, gpu, work, demand, one.num_gpus, targets=targets)


class _Sized(Protocol):
    """What a fleet is sized by: a server's plan (ServerPlan) or a set of servers' option (quote --nodes)."""

    @property
    def fits(self) -> bool: ...
    @property
    def serves_all(self) -> bool: ...
    @property
    def capacity_sequences(self) -> int: ...
    @property
    def thin_margin(self) -> bool: ...


_Unit = TypeVar("_Unit", bound=_Sized)


def fleet(one: _Unit, users: int, share_of: Callable[[int], _Unit]) -> tuple[_Unit, int]:
    """The fewest servers (or sets of servers) whose share each holds at once: each share changes the server's
    layout and capacity (a safe layout may hold more than a thin one), so settle, trying fewer
    servers while a share is held and more while it queues; a fleet held on a thin margin gets one
    more server when that one holds the load safely."""
    option, servers = one, math.ceil(users / max(one.capacity_sequences, 1))
    held: tuple[_Unit, int] | None = None
    tried: set[int] = set()
    for _ in range(6):
        if servers in tried:
            break
        tried.add(servers)
        share = share_of(servers)
        if not share.fits:
            break
        option = share
        if share.serves_all:
            held = share, servers
        fewer = math.ceil(users / max(share.capacity_sequences, 1))
        if share.serves_all and fewer >= servers:
            break
        servers = fewer if share.serves_all else max(fewer, servers + 1)
        if held and servers >= held[1]:
            break
    if held and held[0].thin_margin:  # the next size up of a fleet is one more server
        more = share_of(held[1] + 1)
        if more.fits and more.serves_all and not more.thin_margin:
            held = more, held[1] + 1
    return held or (option, servers)


def with_money(option: Option, gpu: GpuSpec, servers: int | None, users: int | None, hours: float) -> Option:
    """The fleet's price per hour and per user, and buying the GPUs against renting them `hours` a
    month."""
    price = option.usd_per_hour
    fleet = price * servers if price and servers else None
    purchase = gpu.purchase_price_usd * option.num_gpus if gpu.purchase_price_usd else None
    priced: Option = replace(  # what replace makes, without running __init__ again
        option,
        servers=servers,
        fleet_usd_per_hour=fleet,
        usd_per_user_hour=fleet / users if fleet and users else None,
        purchase_usd=purchase,
        purchase_price_date=gpu.purchase_price_date if purchase else None,
        purchase_price_kind=gpu.purchase_price_kind if purchase else None,
        rent_usd_per_month=price * hours if price else None,
        break_even_months=economics.break_even_months(purchase, price, hours)
        if purchase and price and option.fits
        else None,
    )
    return priced


#: The ranking rule, stated in every quote (terminal footer and JSON assumptions).
RANKING = (
    "options meeting the per-user targets on a safe memory margin first, then those meeting them on a "
    "thin margin (within gpusize's error on public start-up logs), then those missing them"
)


def rank(options: list[Option], per_user: bool = False) -> list[Option]:
    """Options that fit first, misfits last; among those that fit, the ones meeting the targets
    (`Option.meets_targets`) before those that miss them, and a safe margin before a thin one. For a
    stated load (`per_user`), then the lowest price per user served at once (every option then holds
    the load, with as many servers as it takes); otherwise those holding the whole load on one server
    first, then those that queue, each cheapest per hour. Unpriced options last within a tier, then
    the fewest GPUs."""

    def key(o: Option) -> tuple[int, int, float, int, str]:
        if per_user:
            tier = 0 if o.fits else 2
            money = o.usd_per_user_hour
        else:
            tier = 0 if o.fits and o.serves_all else 1 if o.fits else 2
            money = o.usd_per_hour
        grade = (0 if o.meets_targets else 2) + (1 if o.thin_margin else 0) if o.fits else 0
        return (tier, grade, money if money else float("inf"), o.num_gpus * (o.servers or 1), o.gpu)

    return sorted(options, key=key)


def memory_parts(option: Option) -> list[tuple[str, int]]:
    """Per-GPU memory breakdown for charts: weights, KV, activations, overhead, free."""
    if option.usable_bytes is None:
        return []
    parts = [
        ("weights", option.weights_bytes or 0),
        ("KV cache", option.kv_cache_bytes or 0),
        ("activations", option.activations_bytes or 0),
        ("overhead", option.overhead_bytes or 0),
    ]
    used = sum(v for _, v in parts)
    return parts + [("free", max(option.usable_bytes - used, 0))]
