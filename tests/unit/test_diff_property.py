"""``diff A B`` and ``diff B A`` never both report the same regression (issue 39): a property
of diff_reports over reports Hypothesis builds from the parts diff reads (frames with their
variants, causes, limit and outlook, two frames of one code in one log among them; break
sites; compiles with kernels, refused fusions, unrolled lines, cache lookups and heat), and
over the real report fixtures."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pt2doctor.analysis.diff.reports import diff_reports

DATA = Path(__file__).resolve().parents[1] / "data" / "reports"
CAUSES = ("size", "stride", "dtype", "python_constant", "grad_mode")
KERNELS = ("cpp_fused_add_0", "cpp_fused_gelu_1", "extern_kernels.addmm", "torch.ops.aten.sort")


def _kernel(name: str) -> dict[str, Any]:
    kind = "library" if name.startswith("extern") else "fallback" if "ops" in name else "generated"
    return {"name": name, "kind": kind, "ops": [name.rsplit(".", 1)[-1]], "user_lines": []}


@st.composite
def frames(draw: st.DrawFn, index: int) -> dict[str, Any]:
    variants = draw(st.integers(1, 5))
    recompiles = [
        {"compile_id": f"{index}/{n}",
         "failed_guards": [{"category": c, "tensor": draw(st.sampled_from(["x", "y", None])),
                            "field": draw(st.sampled_from(["size", "stride", None]))}
                           for c in draw(st.lists(st.sampled_from(CAUSES), max_size=2))]}
        for n in range(1, variants)
    ]  # fmt: skip
    line = draw(st.sampled_from([3, 3, 9]))  # two frames of one code, sometimes
    return {
        "function": "step", "display_name": "M.step", "file": "/w/prog.py", "line": line,
        "stream": "log0", "variants": variants, "recompiles": recompiles,
        "compile_ids": [f"{index}/{n}" for n in range(variants)],
        "limit_hit": draw(st.booleans()),
        "outlook": {"bounded": draw(st.sampled_from([True, False, None]))},
    }  # fmt: skip


@st.composite
def compiles(draw: st.DrawFn, index: int) -> dict[str, Any]:
    kernels = [_kernel(k) for k in draw(st.lists(st.sampled_from(KERNELS), max_size=4))]
    refused = draw(st.integers(0, 2))
    status = draw(st.sampled_from(["hit", "miss", "bypass"]))
    return {
        "compile_id": f"{index}/0", "function": "step", "file": "/w/prog.py", "line": 3,
        "stream": "log0", "calls": draw(st.integers(1, 50)),
        "compile_time_s": draw(st.floats(0.1, 10)),
        "seconds_in_graph": draw(st.floats(0.001, 0.2)),
        "kernels": kernels,
        "fusion": {"available": True, "rejected": [
            {"a": f"op{i}", "b": f"op{i + 1}", "reason": "exceeds max fusion", "count": 1,
             "a_side": {"name": f"op{i}", "kernel": KERNELS[i], "line": None},
             "b_side": {"name": f"op{i + 1}", "kernel": KERNELS[i + 1], "line": None}}
            for i in range(refused)]},
        "graph": {"ops": 10, "by_line": [{"file": "/w/prog.py", "line": 4, "code": "y = f(x)",
                                          "ops": draw(st.integers(1, 40))}]},
        "caches": {"fx_graph": {"status": status, "key": draw(st.sampled_from(["k1", "k2"])),
                                "bypass_reason": "Unsupported post grad custom pass"
                                if status == "bypass" else None}},
    }  # fmt: skip


@st.composite
def reports(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 3))
    sites = draw(st.lists(st.sampled_from([5, 7, 11]), max_size=2, unique=True))
    return {
        "inputs": {"streams": ["log0"]},
        "summary": {"total_compile_time_s": draw(st.floats(0.1, 30)), "failures": 0},
        "environment": {"torch_version": draw(st.sampled_from(["2.13.0", "2.14.0"]))},
        "frames": [draw(frames(i)) for i in range(count)],
        "compiles": [draw(compiles(i)) for i in range(count)],
        "graph_breaks": [
            {"site": {"file": "/w/prog.py", "line": line, "function": "step", "code": "x.item()"},
             "category": "data_dependent_scalar", "gb_type": "Tensor.item()"}
            for line in sites
        ],
        "cold_start": {"key_components": {}},
        "failures": [],
    }  # fmt: skip


def _regressions(a: dict[str, Any], b: dict[str, Any]) -> set[tuple[str, str]]:
    """(kind, what) of each regression; a graph by its place (its compile id is B's)."""
    return {
        (c.kind, c.subject.split(" ", 2)[-1] if c.kind in ("graph_ops", "kernels") else c.subject)
        for c in diff_reports(a, b).regressions
    }


@settings(max_examples=150, deadline=None)
@given(reports(), reports())
def test_no_regression_is_found_both_ways(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert not _regressions(a, b) & _regressions(b, a)


def test_no_regression_is_found_both_ways_between_the_real_fixtures() -> None:
    fixtures = [json.loads(path.read_text()) for path in sorted(DATA.glob("*.json"))]
    assert len(fixtures) >= 4
    for a, b in itertools.permutations(fixtures, 2):
        assert not _regressions(a, b) & _regressions(b, a)
