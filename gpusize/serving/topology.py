"""Topology of a serving option (pure): where the weights load, where requests arrive and which GPUs
each request needs, as text and as a Mermaid flowchart."""

from __future__ import annotations

from gpusize.serving.quote import Option

__all__ = ["topology_mermaid", "topology_text"]


def topology_text(option: Option) -> str:
    """Where the weights load, where requests arrive, which GPUs each request needs."""
    link = option.link
    if option.nodes > 1 and option.replicas * option.tensor_parallel < option.num_gpus:
        per = option.num_gpus // option.nodes
        return "\n".join(
            [
                f"requests -> one engine over {option.nodes} servers ({option.nodes} x {per}x {option.gpu})",
                f"  {option.network}",
                "each request needs GPUs of every server; a server failure stops the service",
            ]
        )
    lines = [
        f"requests -> {'load balancer -> ' if option.replicas > 1 else ''}"
        f"{option.replicas} replica(s) in one server ({option.num_gpus}x {option.gpu})"
    ]
    for r in range(option.replicas):
        gpus = [r * option.tensor_parallel + i for i in range(option.tensor_parallel)]
        share = f"1/{option.tensor_parallel} of every layer" if option.tensor_parallel > 1 else "all weights"
        joined = f" <-{link}-> ".join(f"GPU{g}" for g in gpus)
        lines.append(f"  replica {r + 1}: [{joined}] each holds {share} + its KV cache")
    lines.append(
        f"each request needs {option.tensor_parallel} GPU(s) of one replica, one node; "
        f"a GPU failure stops {'its replica' if option.replicas > 1 else 'the service'}"
    )
    return "\n".join(lines)


def topology_mermaid(option: Option) -> str:
    link = option.link
    out = ["flowchart LR", "  U([Requests])"]
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
