"""The curve report as text: one bar per context length."""

from __future__ import annotations

from gpusize.render.fit import settings_text
from gpusize.render.quote import curve_lines
from gpusize.render.text import Style, paragraph
from gpusize.reports.curve import CurveReport

__all__ = ["curve_chart_svg", "render_curve"]


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
