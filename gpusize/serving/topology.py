"""Topology of a serving option (pure): where the weights load, where requests arrive and which GPUs
each request needs, as text and as a Mermaid flowchart. An option over several servers (quote
--nodes) is drawn server by server: one engine across them, or replicas each inside one."""

from __future__ import annotations

from gpusize.serving.quote import Option

__all__ = ["topology_mermaid", "topology_text"]


def _span(option: Option) -> int:
    """GPUs one replica of the option runs on: TP x PP, or the DP x EP group."""
    return max(option.tensor_parallel * option.pipeline_parallel, option.expert_parallel)


def _spans_servers(option: Option) -> bool:
    return option.nodes > 1 and _span(option) > option.gpus_per_server


def _server_role(option: Option, k: int) -> str:
    """What server `k` (0-based) of a replica spanning the servers runs."""
    per = option.gpus_per_server
    if option.expert_parallel > 1:
        ep = option.expert_parallel
        return f"DP ranks {k * per + 1}-{(k + 1) * per} of {ep}, 1/{ep} of the experts each"
    if option.pipeline_parallel > 1:
        return f"pipeline stage {k + 1} of {option.pipeline_parallel}: TP={option.tensor_parallel}"
    return f"TP ranks {k * per + 1}-{(k + 1) * per} of {option.tensor_parallel}"


def topology_text(option: Option) -> str:
    """Where the weights load, where requests arrive, which GPUs each request needs."""
    link = option.link
    per = option.gpus_per_server
    if _spans_servers(option):
        return "\n".join(
            [
                f"requests -> one engine over {option.nodes} servers ({option.nodes} x {per}x {option.gpu})",
                *[f"  server {k + 1}: {_server_role(option, k)}" for k in range(option.nodes)],
                f"  {option.network}",
                "each request needs GPUs of every server; a server failure stops the service",
            ]
        )
    where = (
        f"over {option.nodes} servers ({option.nodes} x {per}x {option.gpu})"
        if option.nodes > 1
        else f"in one server ({option.num_gpus}x {option.gpu})"
    )
    balanced = "load balancer -> " if option.replicas > 1 else ""
    lines = [f"requests -> {balanced}{option.replicas} replica(s) {where}"]
    for r in range(option.replicas):
        first = r * option.tensor_parallel
        gpus = [(first + i) % per for i in range(option.tensor_parallel)]
        share = f"1/{option.tensor_parallel} of every layer" if option.tensor_parallel > 1 else "all weights"
        joined = f" <-{link}-> ".join(f"GPU{g}" for g in gpus)
        on = f" on server {first // per + 1}" if option.nodes > 1 else ""
        lines.append(f"  replica {r + 1}{on}: [{joined}] each holds {share} + its KV cache")
    lines.append(
        f"each request needs {option.tensor_parallel} GPU(s) of one replica, one node; "
        f"a GPU failure stops {'its replica' if option.replicas > 1 else 'the service'}"
    )
    return "\n".join(lines)


def topology_mermaid(option: Option) -> str:
    link = option.link
    out = ["flowchart LR", "  U([Requests])"]
    if _spans_servers(option):  # one engine: a box per server, the link between them
        per = option.gpus_per_server
        for k in range(option.nodes):
            out.append(f"  subgraph S{k}[Server {k + 1}: {per}x {option.gpu}]")
            out.append(f"    E{k}[{_server_role(option, k)}]")
            out.append("  end")
        out.append("  U --> E0")
        out += [f"  E{k} <-->|between servers| E{k + 1}" for k in range(option.nodes - 1)]
        return "\n".join(out)
    entry = "U"
    if option.replicas > 1:
        out.append("  U --> LB[Load balancer]")
        entry = "LB"
    for r in range(option.replicas):
        out.append(f"  subgraph R{r}[Replica {r + 1}: TP={option.tensor_parallel}]")
        gpus = [r * option.tensor_parallel + i for i in range(option.tensor_parallel)]
        for g in gpus:
            out.append(f"    G{g}[GPU {g}: weights 1/{option.tensor_parallel} + KV]")
        for a, b in zip(gpus, gpus[1:], strict=False):
            out.append(f"    G{a} <-->|{link}| G{b}")
        out.append("  end")
        out.append(f"  {entry} --> G{gpus[0]}")
    return "\n".join(out)
