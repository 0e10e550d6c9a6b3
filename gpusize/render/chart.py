"""Charts as SVG text (no plotting dependency): the quote's chart a slide can carry (memory per GPU,
$/1M tokens and tok/s per user for every option, the question in its title) and the concurrency
curve (the HTML page's, `curve --svg`). Rendering only; every text is escaped (`html.escape` after `safe`).
"""

from __future__ import annotations

import math

from gpusize.render.format import human_tokens
from gpusize.render.text import safe
from gpusize.reports.quote import QuoteReport
from gpusize.serving.quote import CurvePoint, Option, memory_parts, option_layout
from gpusize.units import GIB

__all__ = ["MEMORY_COLORS", "concurrency_svg", "curve_svg", "nice_ticks", "quote_chart_svg"]

#: One colour per memory part, shared by every chart (bars and legend).
MEMORY_COLORS = {
    "weights": "#3b6ea5",
    "KV cache": "#e0913a",
    "activations": "#8e6bb0",
    "overhead": "#9a9a9a",
    "free": "#d9ead3",
}
PRICE_COLOR = "#2e8b57"
SPEED_COLOR = "#c0504d"
#: Layout of the quote chart, in SVG user units (pixels).
_WIDTH, _LABEL, _ROW, _PAD = 820, 230, 24, 16


def _h(text: str) -> str:
    import html  # noqa: PLC0415 - start-up: only a chart escapes (html.entities is a large table)

    return html.escape(safe(text))


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round axis ticks from 0 to at least `top`: steps of 1, 2, 2.5 or 5 times a power of ten, about
    `count` of them (0 and `top` > 0 always give at least three ticks)."""
    if top <= 0:
        return [0.0, 1.0, 2.0]
    raw = top / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def _label(o: Option) -> str:
    return f"{o.num_gpus}x {o.gpu} ({option_layout(o)})"


def _tick(value: float) -> str:
    return f"{value:g}" if value < 1e6 else f"{value:.3g}"


def _axis(x0: float, width: float, y: float, ticks: list[float], unit: str) -> str:
    """A horizontal value axis under a panel: tick marks, tick labels, the unit."""
    top = ticks[-1] or 1
    parts = [f'<line class="axis" x1="{x0}" y1="{y}" x2="{x0 + width}" y2="{y}" stroke="#444"/>']
    for t in ticks:
        x = x0 + t / top * width
        parts.append(
            f'<line class="tick" x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#444"/>'
            f'<text x="{x:.1f}" y="{y + 15}" font-size="10" text-anchor="middle">{_tick(t)}</text>'
        )
    parts.append(
        f'<text x="{x0 + width:.1f}" y="{y + 28}" font-size="10" text-anchor="end">{_h(unit)}</text>'
    )
    return "".join(parts)


def _bar_panel(
    rows: list[tuple[Option, float | None]], y: float, heading: str, unit: str, color: str, kind: str
) -> tuple[str, float]:
    """One horizontal bar per option (value None: 'no estimate'); returns the SVG and the next y."""
    x0, width = _LABEL, _WIDTH - _LABEL - 70
    top = nice_ticks(max((v for _, v in rows if v), default=0.0))
    parts = [f'<text class="panel" x="{_PAD}" y="{y}" font-size="13" font-weight="bold">{_h(heading)}</text>']
    y += 10
    for o, value in rows:
        parts.append(f'<text x="{_PAD}" y="{y + 15}" font-size="11">{_h(_label(o))}</text>')
        if value:
            w = value / (top[-1] or 1) * width
            parts.append(
                f'<rect class="{kind}" x="{x0}" y="{y + 3}" width="{w:.1f}" height="{_ROW - 8}" '
                f'fill="{color}"><title>{_h(_label(o))}: {value:,.3g} {_h(unit)}</title></rect>'
                f'<text x="{x0 + w + 4:.1f}" y="{y + 15}" font-size="11">{value:,.3g}</text>'
            )
        else:
            reason = "does not fit" if not o.fits else "no estimate"
            parts.append(f'<text x="{x0}" y="{y + 15}" font-size="11" fill="#888">{reason}</text>')
        y += _ROW
    parts.append(_axis(x0, width, y + 4, top, unit))
    return "".join(parts), y + 52


def _memory_panel(options: tuple[Option, ...], y: float) -> tuple[str, float]:
    """Stacked bars of each option's memory per GPU (weights, KV cache, activations, overhead, free)
    on one GiB scale, so a bigger GPU draws a longer bar."""
    x0, width = _LABEL, _WIDTH - _LABEL - 70
    top = nice_ticks(max((o.usable_bytes or 0) / GIB for o in options))
    heading = "Memory per GPU (GiB)"
    parts = [f'<text class="panel" x="{_PAD}" y="{y}" font-size="13" font-weight="bold">{heading}</text>']
    y += 10
    for o in options:
        parts.append(f'<text x="{_PAD}" y="{y + 15}" font-size="11">{_h(_label(o))}</text>')
        x = float(x0)
        if not o.fits:
            parts.append(f'<text x="{x0}" y="{y + 15}" font-size="11" fill="#888">does not fit</text>')
        for name, value in memory_parts(o) if o.fits else []:
            w = value / GIB / (top[-1] or 1) * width
            parts.append(
                f'<rect class="memory" data-part="{name}" x="{x:.1f}" y="{y + 3}" width="{w:.1f}" '
                f'height="{_ROW - 8}" fill="{MEMORY_COLORS[name]}"><title>{_h(_label(o))}: {name} '
                f"{value / GIB:.1f} GiB</title></rect>"
            )
            x += w
        y += _ROW
    parts.append(_axis(x0, width, y + 4, top, "GiB per GPU"))
    y += 44
    for j, (name, color) in enumerate(MEMORY_COLORS.items()):
        parts.append(
            f'<rect class="legend" x="{x0 + j * 100}" y="{y - 10}" width="10" height="10" fill="{color}"/>'
            f'<text x="{x0 + 14 + j * 100}" y="{y}" font-size="11">{name}</text>'
        )
    return "".join(parts), y + 30


def chart_title(report: QuoteReport) -> str:
    """The question the chart answers: model, context, users and engine."""
    users = f", {report.users:,} users at once" if report.users else ", one user"
    return (
        f"{report.model.id}: {human_tokens(report.workload.context_tokens)} context{users}, "
        f"{report.assumptions.engine}"
    )


def quote_chart_svg(report: QuoteReport) -> str:
    """The quote as one SVG chart: memory per GPU, $/1M tokens and tok/s per user, one row per option
    in the quote's order; the question in its title."""
    options = report.options
    heading = chart_title(report)
    body, y = _memory_panel(options, 64)
    price, y = _bar_panel(
        [(o, o.usd_per_million_tokens if o.fits else None) for o in options],
        y,
        "Price per million tokens ($, indicative)",
        "$ per 1M tokens",
        PRICE_COLOR,
        "price",
    )
    speed, y = _bar_panel(
        [(o, o.per_request_tokens_per_s if o.fits else None) for o in options],
        y,
        "Speed each user sees (tokens/s, estimate)",
        "tokens/s per user",
        SPEED_COLOR,
        "speed",
    )
    note = f"gpusize {report.gpusize_version}; {report.assumptions.prices}"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{y + 10:.0f}" '
        f'viewBox="0 0 {_WIDTH} {y + 10:.0f}" font-family="sans-serif" role="img">'
        f"<title>{_h(heading)}</title>"
        f'<rect width="100%" height="100%" fill="#fff"/>'
        f'<text class="title" x="{_PAD}" y="28" font-size="16" font-weight="bold">{_h(heading)}</text>'
        f'<text x="{_PAD}" y="46" font-size="11" fill="#555">GPU quote, best option first</text>'
        f"{body}{price}{speed}"
        f'<text x="{_PAD}" y="{y - 8:.0f}" font-size="10" fill="#555">{_h(note)}</text></svg>\n'
    )


def _x_at(context: int, first: int, step: float, x0: float) -> float:
    """Where a context length falls on the doubling (log-2) axis of the curve."""
    return x0 + math.log2(context / first) * step


def curve_svg(report: QuoteReport, width: int = 640, height: int = 260) -> str:
    """The quote's concurrency chart for the recommended option: the quoted context and, with
    --users, the users each replica holds marked."""
    rec = report.recommendation
    if rec is None:
        return ""
    share = math.ceil(report.users / ((rec.servers or 1) * rec.replicas)) if report.users else None
    users = (share, f"{report.users:,} users: {share:,} per replica") if report.users and share else None
    return concurrency_svg(report.curve, report.workload.context_tokens, users, width, height)


def concurrency_svg(
    curve: tuple[CurvePoint, ...],
    context: int | None,
    users: tuple[int, str] | None = None,
    width: int = 640,
    height: int = 260,
    heading: str | None = None,
) -> str:
    """Maximum concurrent sequences per replica against context (log-2 x axis), the y axis with round
    ticks; `context` (a vertical line) and `users` (sequences per replica and its label, a horizontal
    line) marked when given; `heading` a title above the chart (a standalone file)."""
    points = [p for p in curve if p.max_concurrency > 0]
    if not points:
        return (
            ""
            if heading is None
            else f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="60" role="img">'
            f'<title>{_h(heading)}</title><rect width="100%" height="100%" fill="#fff"/><text x="10" '
            f'y="22" font-size="14" font-weight="bold">{_h(heading)}</text><text x="10" y="44" '
            'font-size="12">does not fit at any context</text></svg>\n'
        )
    share = users[0] if users else None
    ticks = nice_ticks(max(max(p.max_concurrency for p in points), share or 0))
    y_top = 44 if heading else 20
    top, x0, bottom = ticks[-1] or 1, 60.0, height - 50
    step = (width - 90) / max(len(points) - 1, 1)

    def y_of(value: float) -> float:
        return bottom - value / top * (bottom - y_top)

    xy = [(x0 + i * step, y_of(p.max_concurrency)) for i, p in enumerate(points)]
    path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(xy))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="Concurrency against context" font-family="sans-serif">',
        *(
            [
                f"<title>{_h(heading)}</title>",
                '<rect width="100%" height="100%" fill="#fff"/>',
                f'<text class="title" x="10" y="22" font-size="14" font-weight="bold">{_h(heading)}</text>',
            ]
            if heading
            else []
        ),
        f'<line x1="{x0}" y1="{bottom}" x2="{width - 20}" y2="{bottom}" stroke="#444"/>',
        f'<line x1="{x0}" y1="{y_top}" x2="{x0}" y2="{bottom}" stroke="#444"/>',
    ]
    for t in ticks:
        parts.append(
            f'<line class="ytick" x1="{x0 - 4}" y1="{y_of(t):.1f}" x2="{width - 20}" y2="{y_of(t):.1f}" '
            f'stroke="#ddd"/><text x="{x0 - 6}" y="{y_of(t) + 3:.1f}" font-size="10" '
            f'text-anchor="end">{_tick(t)}</text>'
        )
    parts.append(f'<path d="{path}" fill="none" stroke="#3b6ea5" stroke-width="2"/>')
    for (x, y), p in zip(xy, points, strict=True):
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#3b6ea5"><title>{p.context_tokens:,} tokens: '
            f"{p.max_concurrency:.1f} sequences</title></circle>"
            f'<text x="{x:.1f}" y="{bottom + 14}" font-size="10" text-anchor="middle">'
            f"{human_tokens(p.context_tokens)}</text>"
        )
    if context and points[0].context_tokens <= context <= points[-1].context_tokens:
        x = _x_at(context, points[0].context_tokens, step, x0)
        parts.append(
            f'<line class="quoted-context" x1="{x:.1f}" y1="{y_top}" x2="{x:.1f}" y2="{bottom}" '
            f'stroke="#c0504d" stroke-dasharray="4 3"/><text x="{x + 4:.1f}" y="{y_top + 10}" '
            f'font-size="10" fill="#c0504d">quoted context {human_tokens(context)}</text>'
        )
    if users:
        y, per = y_of(users[0]), users[1]
        parts.append(
            f'<line class="quoted-users" x1="{x0}" y1="{y:.1f}" x2="{width - 20}" y2="{y:.1f}" '
            f'stroke="#2e8b57" stroke-dasharray="4 3"/><text x="{width - 22}" y="{y - 4:.1f}" '
            f'font-size="10" fill="#2e8b57" text-anchor="end">{per}</text>'
        )
    parts.append(
        f'<text x="{width / 2:.0f}" y="{height - 12}" font-size="11" text-anchor="middle">'
        "context per sequence (tokens, log scale) against concurrent sequences per replica</text></svg>"
    )
    return "".join(parts) + ("\n" if heading else "")
