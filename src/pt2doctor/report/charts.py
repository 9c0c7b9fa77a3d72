"""Charts for the HTML report, drawn here as SVG at report time (no plotting library: matplotlib
cost ~2 s of CPU per page on 2 cores, 1.3 s of it its import).

Each chart spec from report/views.py becomes a ``data:image/svg+xml`` URI that the page shows in
an ``<img>``. A browser neither runs script nor loads anything inside an SVG used as an image,
and every label is XML-escaped here, so user-derived text (function and file names) stays text;
the page embeds the URI in an ``src`` attribute Jinja escapes.
"""

from __future__ import annotations

import base64
import math
import statistics
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

Spec = dict[str, Any]
# Colour per compile phase (report-schema.md `phases`), others grey.
PHASE_COLORS = {
    "dynamo_tracing": "#4c72b0",
    "aot_autograd": "#dd8452",
    "backend": "#dd8452",
    "inductor_lowering": "#55a868",
    "inductor_codegen": "#c44e52",
    "cpp_triton_build": "#8172b3",
    "autotuning": "#937860",
    "cache_load": "#da8bc3",
}
HOT, COLD, OTHER, INK, GRID = "#c44e52", "#4c72b0", "#bbbbbb", "#222222", "#e5e5e5"
WIDTH = 860
ROW = 24  # pixels per row of a bar or box chart
TOP, BOTTOM, RIGHT = 34, 44, 28  # title above the plot; tick labels and x label below it
CHAR = 6.3  # average width of a character of the 11 px labels, for the left margin
MAX_LABEL = 72  # longer labels are cut with an ellipsis


class Svg:
    """One chart under its title: elements appended in drawing order, then the document as a
    data URI."""

    def __init__(self, height: float, title: str) -> None:
        self.height = height
        self.parts: list[str] = []
        self.text(WIDTH / 2, 18, title, size=13, anchor="middle")

    def text(self, x: float, y: float, text: str, *, size: int = 11, anchor: str = "start",
             rotate: bool = False) -> None:  # fmt: skip
        turn = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
        self.parts.append(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"'
            f"{turn}>{escape(text)}</text>"
        )

    def rect(self, x: float, y: float, width: float, height: float, fill: str,
             stroke: str | None = None) -> None:  # fmt: skip
        outline = f' stroke="{stroke}"' if stroke else ""
        self.parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(width, 0):.1f}" '
            f'height="{height:.1f}" fill="{fill}"{outline}/>'
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str = INK,
             *, width: float = 1, dashed: bool = False) -> None:  # fmt: skip
        dash = ' stroke-dasharray="5 4"' if dashed else ""
        self.parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
            f'stroke-width="{width}"{dash}/>'
        )

    def dot(self, x: float, y: float, color: str, *, radius: float = 3.5,
            opacity: float = 1) -> None:  # fmt: skip
        self.parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{color}" '
            f'fill-opacity="{opacity}"/>'
        )

    def path(self, points: Sequence[tuple[float, float]], color: str) -> None:
        drawn = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.parts.append(f'<polyline points="{drawn}" fill="none" stroke="{color}" '
                          'stroke-width="1.5"/>')  # fmt: skip

    def uri(self) -> str:
        document = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{self.height:.0f}" '
            f'viewBox="0 0 {WIDTH} {self.height:.0f}" font-family="DejaVu Sans, Arial, '
            f'sans-serif" fill="{INK}"><rect width="100%" height="100%" fill="#ffffff"/>'
            + "".join(self.parts)
            + "</svg>"
        )
        return "data:image/svg+xml;base64," + base64.b64encode(document.encode()).decode("ascii")


class Scale:
    """Values ``low``..``high`` onto pixels ``start``..``end``, linear or logarithmic, with
    round tick values across it (whole numbers only for ``counts``)."""

    def __init__(self, low: float, high: float, start: float, end: float, log: bool = False,
                 counts: bool = False) -> None:  # fmt: skip
        self.log, self.counts = log, counts
        if log:
            low, high = 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))
            high = high * 10 if high <= low else high
        elif high <= low:
            high = low + 1
        self.low, self.high, self.start, self.end = low, high, start, end

    def _unit(self, value: float) -> float:
        if self.log:
            value = max(value, self.low)
            return (math.log10(value) - math.log10(self.low)) / (
                math.log10(self.high) - math.log10(self.low)
            )
        return (value - self.low) / (self.high - self.low)

    def __call__(self, value: float) -> float:
        return self.start + self._unit(value) * (self.end - self.start)

    def ticks(self) -> list[float]:
        if self.log:
            decades = range(round(math.log10(self.low)), round(math.log10(self.high)) + 1)
            marks = (1.0, 2.0, 5.0) if len(decades) <= 3 else (1.0,)
            return [m * 10.0**d for d in decades for m in marks if m * 10.0**d <= self.high]
        raw = (self.high - self.low) / 5
        magnitude = 10 ** math.floor(math.log10(raw))
        steps = (1.0, 2.0, 5.0, 10.0) if self.counts else (1.0, 2.0, 2.5, 5.0, 10.0)
        step = next(m * magnitude for m in steps if m * magnitude >= raw)
        step = max(step, 1.0) if self.counts else step
        first = math.ceil(self.low / step - 1e-9)
        return [round(i * step, 12) for i in range(first, int(self.high / step + 1e-9) + 1)]


def _tick(value: float) -> str:
    return f"{value:.4g}"


def _cut(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def _x_axis(svg: Svg, scale: Scale, top: float, bottom: float, label: str) -> None:
    """Grid lines and tick values across the plot, the axis line and its label below it."""
    for value in scale.ticks():
        x = scale(value)
        svg.line(x, top, x, bottom, GRID)
        svg.text(x, bottom + 14, _tick(value), size=10, anchor="middle")
    svg.line(scale.start, bottom, scale.end, bottom)
    svg.text((scale.start + scale.end) / 2, bottom + 32, label, anchor="middle")


def _legend(svg: Svg, entries: Sequence[tuple[str, str]], y: float) -> None:
    x: float = WIDTH - RIGHT
    for name, color in reversed(entries):
        x -= CHAR * len(name) + 26
        svg.rect(x, y - 9, 10, 10, color)
        svg.text(x + 14, y, name, size=10)


class Rows:
    """A chart with one labelled row per item (bars, boxes, intervals): the labels on the left,
    an x scale over ``values`` below."""

    def __init__(self, spec: Spec, labels: Sequence[str], values: Sequence[float], *,
                 log: bool = False, zero: bool = False, legend: bool = False,
                 counts: bool = False) -> None:  # fmt: skip
        self.top = TOP + (16 if legend else 0)
        self.bottom = self.top + ROW * max(len(labels), 1)
        self.svg = Svg(self.bottom + BOTTOM, spec["title"])
        cut = [_cut(label) for label in labels]
        left = min(max((len(label) for label in cut), default=0) * CHAR + 16, WIDTH * 0.55)
        for index, label in enumerate(cut):
            self.svg.text(left - 8, self.center(index) + 4, label, anchor="end")
        finite = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
        low = min(finite, default=1.0)
        high = max(finite, default=1.0)
        if zero:
            low = min(low, 0.0)
        pad = 0 if log else (high - low) * 0.06
        self.scale = Scale(low if zero or log else low - pad, high + pad, left, WIDTH - RIGHT,
                           log=log, counts=counts)  # fmt: skip
        _x_axis(self.svg, self.scale, self.top, self.bottom, spec["xlabel"])

    def center(self, index: int) -> float:
        return self.top + ROW * (index + 0.5)


def _hbar(spec: Spec) -> Svg:
    """Horizontal bars, first on top, each with its value; highlighted ones in red."""
    values = spec["values"]
    counts = all(isinstance(value, int) for value in values)
    rows = Rows(spec, spec["labels"], [*values, 0], zero=True, counts=counts)
    for index, (value, hot) in enumerate(zip(values, spec["highlight"], strict=True)):
        y, end = rows.center(index), rows.scale(value)
        rows.svg.rect(rows.scale(0), y - ROW * 0.35, end - rows.scale(0), ROW * 0.7,
                      HOT if hot else COLD)  # fmt: skip
        rows.svg.text(end + 4, y + 4, str(value), size=10)
    return rows.svg


def _timeline(spec: Spec) -> Svg:
    """One row per compile: a bar from its start, split into its phases (stacked left to
    right); the unexplained rest of its compile time in grey."""
    items = spec["rows"]
    ends = [row["start"] + row["duration"] for row in items]
    rows = Rows(spec, [row["label"] for row in items], [*ends, 0], zero=True, legend=True)
    seen: dict[str, str] = {}
    for index, row in enumerate(items):
        y, left = rows.center(index), row["start"]
        pieces = list(row["phases"].items())
        rest = row["duration"] - sum(seconds for _, seconds in pieces)
        if rest > 0:
            pieces.append(("other", rest))
        for phase, seconds in pieces:
            color = OTHER if phase == "other" else PHASE_COLORS.get(phase, "#999999")
            seen.setdefault(phase, color)
            x = rows.scale(left)
            rows.svg.rect(x, y - ROW * 0.35, rows.scale(left + seconds) - x, ROW * 0.7, color)
            left += seconds
    _legend(rows.svg, list(seen.items()), TOP + 4)
    return rows.svg


def _steps(spec: Spec) -> Svg:
    """A cumulative step line; compiles after warmup marked red, warmup's end dashed."""
    xs, ys = spec["x"], spec["y"]
    top, bottom, left = TOP, TOP + 170, 64
    svg = Svg(bottom + BOTTOM, spec["title"])
    marks = [*xs, *([spec["warmup_end"]] if spec.get("warmup_end") is not None else [])]
    low, high = min(marks, default=0.0), max(marks, default=1.0)
    pad = (high - low) * 0.05 or 0.5
    x_scale = Scale(low - pad, high + pad, left, WIDTH - RIGHT)
    y_scale = Scale(0, max(ys, default=1) * 1.08, bottom, top, counts=True)
    _x_axis(svg, x_scale, top, bottom, spec["xlabel"])
    for value in y_scale.ticks():
        svg.line(left, y_scale(value), WIDTH - RIGHT, y_scale(value), GRID)
        svg.text(left - 6, y_scale(value) + 4, _tick(value), size=10, anchor="end")
    svg.line(left, top, left, bottom)
    svg.text(16, (top + bottom) / 2, spec["ylabel"], anchor="middle", rotate=True)
    points: list[tuple[float, float]] = []
    for index, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if index:
            points.append((x_scale(x), y_scale(ys[index - 1])))
        points.append((x_scale(x), y_scale(y)))
    svg.path(points, COLD)
    for x, y, late in zip(xs, ys, spec["marks"], strict=True):
        svg.dot(x_scale(x), y_scale(y), HOT if late else COLD)
    if spec.get("warmup_end") is not None:
        x = x_scale(spec["warmup_end"])
        svg.line(x, top, x, bottom, "#777777", dashed=True)
        svg.text(x + 4, top + 12, "end of warmup", size=10)
    return svg


def _loss(spec: Spec) -> Svg:
    """A training cell's loss per step: eager's band shaded, eager, fp64 (dashed) and
    compiled lines; the step where compiled leaves the band marked red."""
    eager, compiled, band = spec["eager"], spec["compiled"], spec["band"]
    fp64 = spec.get("fp64") or []
    top, bottom, left = TOP, TOP + 170, 72
    svg = Svg(bottom + BOTTOM + 18, spec["title"])
    values = [*eager, *compiled, *fp64, *(e + b for e, b in zip(eager, band, strict=False)),
              *(e - b for e, b in zip(eager, band, strict=False))]  # fmt: skip
    low, high = min(values, default=0.0), max(values, default=1.0)
    pad = (high - low) * 0.05 or 0.5
    x_scale = Scale(1, max(len(eager), 2), left, WIDTH - RIGHT)  # steps from 1, as said
    y_scale = Scale(low - pad, high + pad, bottom, top)
    _x_axis(svg, x_scale, top, bottom, "training step")
    for value in y_scale.ticks():
        svg.line(left, y_scale(value), WIDTH - RIGHT, y_scale(value), GRID)
        svg.text(left - 6, y_scale(value) + 4, _tick(value), size=10, anchor="end")
    svg.line(left, top, left, bottom)
    svg.text(16, (top + bottom) / 2, "loss", anchor="middle", rotate=True)
    upper = [
        (x_scale(i + 1), y_scale(e + b)) for i, (e, b) in enumerate(zip(eager, band, strict=False))
    ]
    lower = [
        (x_scale(i + 1), y_scale(e - b)) for i, (e, b) in enumerate(zip(eager, band, strict=False))
    ]
    outline = " ".join(f"{x:.1f},{y:.1f}" for x, y in [*upper, *reversed(lower)])
    svg.parts.append(f'<polygon points="{outline}" fill="{COLD}" fill-opacity="0.15"/>')
    svg.path([(x_scale(i + 1), y_scale(v)) for i, v in enumerate(eager)], COLD)
    if fp64:
        drawn = " ".join(f"{x_scale(i + 1):.1f},{y_scale(v):.1f}" for i, v in enumerate(fp64))
        svg.parts.append(f'<polyline points="{drawn}" fill="none" stroke="{INK}" '
                         'stroke-width="1" stroke-dasharray="4 3"/>')  # fmt: skip
    svg.path([(x_scale(i + 1), y_scale(v)) for i, v in enumerate(compiled)], HOT)
    if spec.get("left_at") is not None:
        x = x_scale(spec["left_at"] + 1)
        svg.line(x, top, x, bottom, HOT, dashed=True)
        svg.text(x + 4, top + 12, f"leaves the band at step {spec['left_at'] + 1}", size=10)
    _legend(
        svg, [("eager (band shaded)", COLD), ("compiled", HOT), ("fp64", INK)], bottom + BOTTOM + 10
    )
    return svg


def _box(rows: Rows, index: int, values: Sequence[float], color: str) -> None:
    """A box from the first to the third quartile with its median, whiskers to the furthest
    values within 1.5 IQR of the box (outliers not drawn), and every value as a faint dot."""
    y, svg, scale = rows.center(index), rows.svg, rows.scale
    ordered = sorted(values)
    q1, median, q3 = (
        statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1 else ordered * 3
    )
    reach = 1.5 * (q3 - q1)
    low = min(v for v in ordered if v >= q1 - reach)
    high = max(v for v in ordered if v <= q3 + reach)
    svg.line(scale(low), y, scale(q1), y)
    svg.line(scale(q3), y, scale(high), y)
    for end in (low, high):
        svg.line(scale(end), y - ROW * 0.15, scale(end), y + ROW * 0.15)
    svg.rect(scale(q1), y - ROW * 0.3, scale(q3) - scale(q1), ROW * 0.6, "#ffffff", INK)
    svg.line(scale(median), y - ROW * 0.3, scale(median), y + ROW * 0.3, color, width=2)
    for value in ordered:
        svg.dot(scale(value), y, color, radius=2, opacity=0.5)


def _latency(spec: Spec) -> Svg:
    """One row per series (eager / compiled per variant and group), on a log scale: a box plot
    of every iteration when the raw values are there, else its p50, p95 and p99 as marks on a
    line."""
    items = spec["rows"]
    marks = ("p50_ms", "p95_ms", "p99_ms")
    values = [v for row in items for v in (row["values_ms"] or [row[k] for k in marks]) if v]
    rows = Rows(spec, [row["label"] for row in items], values, log=True)
    for index, row in enumerate(items):
        color = HOT if row["compiled"] else COLD
        if row["values_ms"]:
            _box(rows, index, row["values_ms"], color)
            continue
        found = [row[key] for key in marks if row[key]]
        y = rows.center(index)
        if found:
            rows.svg.line(rows.scale(found[0]), y, rows.scale(found[-1]), y, color)
            for value in found:
                rows.svg.line(rows.scale(value), y - 6, rows.scale(value), y + 6, color)
            rows.svg.dot(rows.scale(found[0]), y, color)
    return rows.svg


def _speedup(spec: Spec) -> Svg:
    """Speedup per variant and group with its 95% interval; 1x (no gain) dashed."""
    items = spec["rows"]
    values = [1.0] + [v for row in items for v in (row["value"], row["low"], row["high"]) if v]
    rows = Rows(spec, [row["label"] for row in items], values)
    one = rows.scale(1.0)
    rows.svg.line(one, rows.top, one, rows.bottom, "#777777", dashed=True)
    for index, row in enumerate(items):
        y, color = rows.center(index), COLD if row["value"] >= 1 else HOT
        if row["low"] is not None and row["high"] is not None:
            low, high = rows.scale(row["low"]), rows.scale(row["high"])
            rows.svg.line(low, y, high, y, color, width=1.5)
            for end in (low, high):
                rows.svg.line(end, y - 5, end, y + 5, color, width=1.5)
        rows.svg.dot(rows.scale(row["value"]), y, color, radius=4)
    return rows.svg


DRAW: dict[str, Callable[[Spec], Svg]] = {
    "hbar": _hbar,
    "timeline": _timeline,
    "steps": _steps,
    "latency": _latency,
    "speedup": _speedup,
    "loss": _loss,
}


def draw_chart(spec: Spec) -> str:
    """The chart as a ``data:image/svg+xml;base64,...`` URI."""
    return DRAW[spec["kind"]](spec).uri()
