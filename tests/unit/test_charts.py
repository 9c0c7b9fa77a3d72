"""The HTML report's SVG charts (report/charts.py), drawn from every chart spec the golden view
models hold (tests/golden/*.view.json: real reports, hostile names included)."""

from __future__ import annotations

import base64
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pt2doctor.report.charts import DRAW, Scale, draw_chart

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SVG = "{http://www.w3.org/2000/svg}"


def _specs(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        own = [value] if value.get("kind") in DRAW and "title" in value else []
        return own + [spec for item in value.values() for spec in _specs(item)]
    if isinstance(value, list):
        return [spec for item in value for spec in _specs(item)]
    return []


SPECS = [spec for path in sorted(GOLDEN.glob("*.view.json"))
         for spec in _specs(json.loads(path.read_text()))]  # fmt: skip


def _document(spec: dict[str, Any]) -> ET.Element:
    uri = draw_chart(spec)
    head, _, data = uri.partition(",")
    assert head == "data:image/svg+xml;base64"
    return ET.fromstring(base64.b64decode(data))


def test_every_kind_is_drawn_from_the_golden_reports() -> None:
    assert {spec["kind"] for spec in SPECS} == set(DRAW)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: f"{spec['kind']}:{spec['title']}")
def test_each_chart_is_well_formed_svg_whose_labels_stay_text(spec: dict[str, Any]) -> None:
    root = _document(spec)
    assert root.tag == f"{SVG}svg"
    # Only drawing elements: a label such as "<img src=x onerror=...>" is a text node.
    tags = {element.tag.removeprefix(SVG) for element in root.iter()}
    assert tags <= {"svg", "rect", "line", "text", "circle", "polyline", "polygon"}, tags
    texts = [element.text or "" for element in root.iter(f"{SVG}text")]
    assert spec["title"] in texts
    labels = spec.get("labels") or [row["label"] for row in spec.get("rows", [])]
    for label in labels:  # each row's label, whole or cut with an ellipsis
        assert any(t == label or (t.endswith("…") and label.startswith(t[:-1])) for t in texts)


def test_ticks_are_round_and_whole_numbers_for_counts() -> None:
    assert Scale(0, 10.6, 0, 100, counts=True).ticks() == [0, 5, 10]
    assert Scale(0, 2.16, 0, 100, counts=True).ticks() == [0, 1, 2]
    assert Scale(0, 0.5, 0, 100).ticks() == [0, 0.1, 0.2, 0.3, 0.4, 0.5]
    log = Scale(0.013, 0.42, 0, 100, log=True)
    assert (log.low, log.high) == (0.01, 1)
    assert log.ticks() == pytest.approx([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1])
    assert log(0.1) == pytest.approx(50) and log(1) == pytest.approx(100)


def test_edge_cases_draw() -> None:
    """No rows, one value, zeros, missing percentiles: each still a chart."""
    for spec in (
        {"kind": "hbar", "title": "t", "labels": [], "values": [], "highlight": [], "xlabel": "x"},
        {"kind": "hbar", "title": "t", "labels": ["a"], "values": [0], "highlight": [False],
         "xlabel": "x"},
        {"kind": "steps", "title": "t", "x": [1.0], "y": [1], "marks": [True], "xlabel": "x",
         "ylabel": "y", "warmup_end": 1.0},
        {"kind": "latency", "title": "t", "xlabel": "x", "rows": [
            {"label": "a", "compiled": True, "values_ms": [0.5], "p50_ms": 0.5, "p95_ms": 0.5,
             "p99_ms": 0.5},
            {"label": "b", "compiled": False, "values_ms": [], "p50_ms": None, "p95_ms": None,
             "p99_ms": None}]},
        {"kind": "speedup", "title": "t", "xlabel": "x",
         "rows": [{"label": "a", "value": 2.0, "low": None, "high": None}]},
        {"kind": "timeline", "title": "t", "xlabel": "x",
         "rows": [{"label": "a", "start": 0.0, "duration": 0.0, "phases": {}}]},
    ):  # fmt: skip
        root = _document(spec)
        numbers = [float(v) for e in root.iter() for k, v in e.attrib.items() if k in ("x", "y")]
        assert all(math.isfinite(n) for n in numbers), spec["kind"]
