"""The curve report as text: one bar per context length."""

from __future__ import annotations

from gpusize.render.fit import settings_text
from gpusize.render.format import human_tokens
from gpusize.render.text import Style, paragraph
from gpusize.reports.curve import CurveReport
from gpusize.serving.curve import CurvePoint

__all__ = ["curve_chart_svg", "curve_lines", "render_curve"]


def _head(report: CurveReport) -> str:
    return (
        f"{report.model.name} on {report.num_gpus}x {report.gpu_full_name}: concurrent sequences by context "
        f"({report.assumptions.engine} KV pool)"
        + (f", tested with {report.users:,} users" if report.users > 1 else "")
    )


def curve_chart_svg(report: CurveReport) -> str:
    """The curve as an SVG chart (`curve --svg`), the question in its title."""
    from gpusize.render.chart import concurrency_svg  # noqa: PLC0415 - start-up: only `curve --svg`

    return concurrency_svg(report.points, None, width=760, height=320, heading=_head(report))


def render_curve(report: CurveReport, width: int, style: Style) -> str:
    a = report.assumptions
    head = _head(report)
    lines = [style(paragraph(head, width), "bold"), *curve_lines(report.points, width)]
    lines.append(
        style(
            paragraph(
                f"Assumptions: {a.engine}, {settings_text(a.settings, a.terms.graphs)}; weights "
                f"{a.weight_format}, KV {a.kv_cache_dtype}.",
                width,
            ),
            "dim",
        )
    )
    lines += [paragraph(f"Note: {n}", width) for n in a.notes]
    return "\n".join(lines) + "\n"


def curve_lines(points: tuple[CurvePoint, ...] | list[CurvePoint], width: int = 80) -> list[str]:
    """One bar per context length, each line at most `width` characters (the bar at most 40)."""
    top = max((p.max_concurrency for p in points), default=0) or 1
    tails = [f"{p.max_concurrency:,.1f}" + _point_note(p) for p in points]
    bar_width = max(10, min(40, width - 7 - max((len(t) for t in tails), default=0)))
    lines = []
    for p, tail in zip(points, tails, strict=True):
        bar = "#" * max(1, round(p.max_concurrency / top * bar_width)) if p.max_concurrency else ""
        lines.append(f"{human_tokens(p.context_tokens):>5} {bar:<{bar_width}} {tail}")
    return lines


def _point_note(p: CurvePoint) -> str:
    if not p.fits:
        return " (does not fit)"
    return " (thin margin)" if p.thin_margin else ""
