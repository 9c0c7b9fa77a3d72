"""Charts for the HTML report, drawn at report time by matplotlib (Agg, no display).

Each chart spec from report/views.py becomes a PNG ``data:`` URI. A raster image cannot carry
markup, so user-derived labels (function and file names) inside a chart are safe by
construction; the page embeds the URI in an ``<img src>`` attribute Jinja escapes. matplotlib is
imported here only, lazily, so ``pt2doctor report --format term`` never pays its ~0.3 s import.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

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
HOT, COLD = "#c44e52", "#4c72b0"


def _horizontal() -> dict[str, Any]:
    """A horizontal boxplot: ``orientation=`` from Matplotlib 3.10 (``vert=`` is deprecated
    in 3.11), ``vert=False`` before."""
    import matplotlib

    major, minor = (int(part) for part in matplotlib.__version__.split(".")[:2])
    return {"orientation": "horizontal"} if (major, minor) >= (3, 10) else {"vert": False}


DPI = 96


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def _png_uri(figure: Figure) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _plain(label: str) -> str:
    """A label drawn as typed: ``$`` would otherwise start matplotlib's math mode."""
    return label.replace("$", r"\$")


def _hbar(spec: Spec) -> Figure:
    """Horizontal bars, hottest on top; hot ones in red."""
    labels, values = spec["labels"], spec["values"]
    figure = _figure(9, 0.8 + 0.32 * len(labels))
    axes: Axes = figure.add_subplot()
    positions = list(range(len(labels)))
    colors = [HOT if hot else COLD for hot in spec["highlight"]]
    axes.barh(positions, values, color=colors)
    axes.set_yticks(positions, [_plain(label) for label in labels], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(spec["xlabel"])
    for position, value in zip(positions, values, strict=True):
        axes.annotate(str(value), (value, position), xytext=(3, 0), textcoords="offset points",
                      va="center", fontsize=8)  # fmt: skip
    return figure


def _timeline(spec: Spec) -> Figure:
    """One row per compile: a bar from its start, split into its phases (stacked left to
    right); the unexplained rest of its compile time in grey."""
    rows = spec["rows"]
    figure = _figure(9, 1.0 + 0.3 * len(rows))
    axes: Axes = figure.add_subplot()
    seen: set[str] = set()
    for index, row in enumerate(rows):
        left = row["start"]
        for phase, seconds in row["phases"].items():
            label = phase if phase not in seen else None
            seen.add(phase)
            axes.barh(index, seconds, left=left, color=PHASE_COLORS.get(phase, "#999"), label=label)
            left += seconds
        rest = row["duration"] - (left - row["start"])
        if rest > 0:
            label = "other" if "other" not in seen else None
            seen.add("other")
            axes.barh(index, rest, left=left, color="#bbbbbb", label=label)
    axes.set_yticks(range(len(rows)), [_plain(row["label"]) for row in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(spec["xlabel"])
    if seen:
        axes.legend(fontsize=8, loc="lower right")
    return figure


def _steps(spec: Spec) -> Figure:
    """A cumulative step line; compiles after warmup marked red, warmup's end dashed."""
    figure = _figure(9, 3)
    axes: Axes = figure.add_subplot()
    axes.step(spec["x"], spec["y"], where="post", color=COLD)
    colors = [HOT if late else COLD for late in spec["marks"]]
    axes.scatter(spec["x"], spec["y"], c=colors, zorder=3)
    if spec.get("warmup_end") is not None:
        axes.axvline(spec["warmup_end"], linestyle="--", color="#777", label="end of warmup")
        axes.legend(fontsize=8, loc="lower right")
    axes.set_xlabel(spec["xlabel"])
    axes.set_ylabel(spec["ylabel"])
    return figure


def _latency(spec: Spec) -> Figure:
    """One row per series (eager / compiled per variant and group): a box plot of every
    iteration when the raw values are there, else its p50, p95 and p99 as marks on a line."""
    rows = spec["rows"]
    figure = _figure(9, 1.0 + 0.4 * len(rows))
    axes: Axes = figure.add_subplot()
    for index, row in enumerate(rows):
        color = HOT if row["compiled"] else COLD
        values = row["values_ms"]
        if values:
            axes.boxplot([values], positions=[index], widths=0.6, showfliers=False,
                         medianprops={"color": color}, **_horizontal())  # fmt: skip
            axes.scatter(values, [index] * len(values), s=8, color=color, alpha=0.5, zorder=3)
        else:
            marks = [row[key] for key in ("p50_ms", "p95_ms", "p99_ms") if row[key] is not None]
            axes.plot(marks, [index] * len(marks), color=color, marker="|", markersize=12)
            axes.scatter(marks[:1], [index], color=color, zorder=3)
    axes.set_yticks(range(len(rows)), [_plain(row["label"]) for row in rows], fontsize=8)
    axes.set_ylim(len(rows) - 0.5, -0.5)
    axes.set_xscale("log")
    axes.set_xlabel(spec["xlabel"])
    return figure


def _speedup(spec: Spec) -> Figure:
    """Speedup per variant and group with its 95% interval; 1x (no gain) dashed."""
    rows = spec["rows"]
    figure = _figure(9, 1.0 + 0.35 * len(rows))
    axes: Axes = figure.add_subplot()
    for index, row in enumerate(rows):
        color = COLD if row["value"] >= 1 else HOT
        if row["low"] is not None and row["high"] is not None:
            error = [[row["value"] - row["low"]], [row["high"] - row["value"]]]
            axes.errorbar([row["value"]], [index], xerr=error, fmt="o", color=color, capsize=4)
        else:
            axes.scatter([row["value"]], [index], color=color)
    axes.axvline(1.0, linestyle="--", color="#777")
    axes.set_yticks(range(len(rows)), [_plain(row["label"]) for row in rows], fontsize=8)
    axes.set_ylim(len(rows) - 0.5, -0.5)
    axes.set_xlabel(spec["xlabel"])
    return figure


DRAW: dict[str, Callable[[Spec], Figure]] = {
    "hbar": _hbar,
    "timeline": _timeline,
    "steps": _steps,
    "latency": _latency,
    "speedup": _speedup,
}


def draw_chart(spec: Spec) -> str:
    """The chart as a ``data:image/png;base64,...`` URI."""
    figure = DRAW[spec["kind"]](spec)
    figure.suptitle(spec["title"], fontsize=10)
    return _png_uri(figure)
