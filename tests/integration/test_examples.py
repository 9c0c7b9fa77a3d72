"""The examples the README and ``make demo`` point at, run for real (``--backend eager`` and the
quick check, to stay cheap; ``make demo`` runs them under Inductor).

Expected values come from the example's own source (the ``PLANTED`` lines, its request list) and
output, and from the raw TORCH_TRACE log: never from a stored copy of pt2doctor's output.
"""

from __future__ import annotations

import ast
import json
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oracles import raw_records

pytestmark = pytest.mark.torch_run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SERVING = EXAMPLES / "serving_loop.py"
TIMEOUT_S = 600


def _line_of(path: Path, text: str) -> int:
    """The 1-based line of the only line of ``path`` that contains ``text``."""
    (line,) = [i for i, row in enumerate(path.read_text().splitlines(), 1) if text in row]
    return line


def _requests() -> list[tuple[str, int]]:
    """serving_loop.py's REQUESTS, read from its source."""
    tree = ast.parse(SERVING.read_text())
    (value,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "REQUESTS"
    ]
    return ast.literal_eval(value)


def _pt2doctor(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pt2doctor", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip


def test_serving_loop_shows_its_planted_problems(tmp_path: Path, run_env: dict[str, str]) -> None:
    out = tmp_path / "run"
    args = ["run", "--out", str(out), "--backend", "eager", "--warmup-calls", "3", "--"]
    done = _pt2doctor([*args, sys.executable, str(SERVING)], tmp_path, run_env)
    assert done.returncode == 0, done.stderr[-4000:]
    requests = _requests()
    assert re.search(rf"served {len(requests)} requests", done.stdout), done.stdout
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    raw_ids = [
        env["compilation_metrics"]["compile_id"]
        for env, _ in raw_records(out / "trace")
        if "compilation_metrics" in env
    ]
    assert sorted(c["compile_id"] for c in report["compiles"]) == sorted(raw_ids)
    sites = {row["site"]["line"]: row for row in report["graph_breaks"]}
    hot = sites[_line_of(SERVING, "confidence = logits.softmax")]  # PLANTED (1)
    assert hot["hits"] == len(requests) and hot["hot"] is True
    startup = sites[_line_of(SERVING, 'print(f"self-check:')]  # PLANTED (2)
    assert startup["hits"] == 1 and startup["category"] == "print_or_logging"
    skipped = sites[_line_of(SERVING, "texts.append(chr(")]  # PLANTED (5): frame skipped
    assert skipped["hits"] is None
    forward = [c for c in report["compiles"] if c["function"] == "forward"]
    # PLANTED (3) and (4): recompiles of the forward, on the sequence length and on `causal`.
    assert [c["cause"] for c in forward].count("recompile") >= 2
    assert sum(c["calls"] for c in forward) == len(requests)
    # Each variant's median call, from the probes' duration histogram (5% buckets): one call
    # of the graph, so within its total time; a variant called once has its one call's time.
    for row in forward:
        if row["calls"]:
            median = row["seconds_per_call_median"]
            assert 0 < median <= row["seconds_in_graph"] * 1.05 + 1e-6, row
            if row["calls"] == 1:
                assert abs(median - row["seconds_in_graph"]) <= 0.05 * median + 1e-6, row
            assert row["seconds_per_call_mad"] >= 0
    # Compiles after the 3 warmup calls: named as the user knows the frame, like its recompiles.
    late = [f for f in report["findings"] if f["code"] == "unexplained_recompile_after_warmup"]
    assert late and all(f["title"].startswith("TinyLM.forward (") for f in late), late


def test_transformer_example_quick_check_and_its_memory_budget(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """``check --quick --profile`` on one of the example's cells under Inductor: 8
    iterations, no cold start, no regional variant (the model repeats a block: a full check
    would add one). A peak-memory budget of 1 MB fails, with the group process's own peak RSS
    as the measured value. The profile says why the speedup is what it is: library kernels
    against the rest, and the bound on the speedup, checked against the profiler's own
    events."""
    budget = tmp_path / "pt2doctor.toml"
    budget.write_text("peak_memory_mb = 1\n")
    out = tmp_path / "check"
    done = _pt2doctor(
        ["check", str(EXAMPLES / "cases" / "transformer_block.py"), "--out", str(out),
         "--quick", "--profile", "--cells", "seq16/float32/eval", "--budget", str(budget)],
        tmp_path, run_env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-4000:]
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert {c["id"]: c["verdict"] for c in report["cells"]} == {
        "transformer/seq16/float32/eval": "pass"
    }
    (variant,) = report["variants"]
    assert variant["name"] == "default" and not variant["cold_start"]
    (group,) = variant["groups"]
    samples = [json.loads(line) for line in Path(group["samples"]).read_text().splitlines()]
    assert sorted({s["iteration"] for s in samples}) == list(range(8))
    assert group["steady"]["iterations"] == 8
    peak = group["memory"]["peak_rss_mb"]
    # The kernel's peak RSS over this test process's finished descendants bounds it above.
    assert 100 < peak <= resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 + 0.1
    (clause,) = [c for c in report["contract"]["clauses"] if c["name"] == "peak_memory_mb"]
    assert (clause["ok"], clause["measured"], clause["budget"]) == (False, peak, 1)
    profile = group["profile"]
    assert profile["available"] and profile["calls"] == 10
    eager, compiled = profile["eager"], profile["compiled"]
    for split in (eager, compiled):
        parts = split["library_ms"] + split["ops_ms"] + split["overhead_ms"]
        assert parts == pytest.approx(split["total_ms"], abs=1e-5)
    # The eager library time is the profiler's: its matmul and attention events, per call.
    trace = json.loads(Path(profile["traces"]["eager"]).read_text())["traceEvents"]
    events = [e for e in trace if e.get("ph") == "X"]
    start = next(e["ts"] + e["dur"] for e in events if e["name"] == "pt2doctor: window start")
    end = next(e["ts"] for e in events if e["name"] == "pt2doctor: window end")
    library = sum(
        e["dur"]
        for e in events
        if start <= e["ts"] < end
        and (e["name"] in ("aten::addmm", "aten::mm", "aten::bmm")
             or e["name"].startswith("aten::_scaled_dot_product"))
    ) / 10 / 1000  # fmt: skip
    assert eager["library_ms"] == pytest.approx(library, rel=0.01)
    assert compiled["library_ms"] > 0
    bound = eager["total_ms"] / compiled["library_ms"]
    assert profile["bound"] == pytest.approx(bound, rel=1e-3)
    assert profile["bound"] >= eager["total_ms"] / compiled["total_ms"]  # Amdahl: at most
    assert f"at most {profile['bound']:.2f}x without faster library kernels" in profile["statement"]
    assert f"speedup {group['steady']['speedup']:.2f}x" in profile["statement"]
    assert "why (profiled): library kernels" in done.stderr + done.stdout
