"""Report kinds and the renderer registry: every report carries its ``kind`` (reports written
before the field load as run reports), ``RENDERERS[(kind, format)]`` picks the renderer of each
kind, and the core report package imports no command package (the layering that keeps
``pt2doctor report`` from loading check or ablate code)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from goldens import GOLDEN, fixture_names, load_fixture
from pt2doctor import workers
from pt2doctor.check.report import env_changes
from pt2doctor.check.types import VERDICT_RANK, verdict_rank
from pt2doctor.cli.renderers import RENDERERS, RenderContext, render
from pt2doctor.report import build_report
from pt2doctor.report.types import KINDS, report_kind
from pt2doctor.trace.collect import collect_run

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "pt2doctor"
DATA = REPO / "tests" / "data"
CORPUS = REPO.parent / "shared" / "corpus" / "tlparse-inputs" / "inputs"
FIXTURES = [
    (folder, name)
    for folder in ("reports", "checks", "ablates")
    for name in fixture_names(DATA / folder)
]


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (lazy imports inside functions too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_every_kind_has_a_renderer_for_every_format() -> None:
    assert set(RENDERERS) == {(k, f) for k in KINDS for f in ("term", "md", "html")}


@pytest.mark.parametrize(("folder", "name"), FIXTURES)
def test_the_registry_picks_the_renderer_of_the_reports_kind(folder: str, name: str) -> None:
    """report.md through the registry is the kind's golden Markdown (the run fixtures were
    written before ``kind`` existed: they load as run reports)."""
    report = load_fixture(DATA / folder, name)
    expected = {"reports": "run", "checks": "check", "ablates": "ablate"}[folder]
    assert report_kind(report) == expected
    assert render(report, "md", RenderContext()) == (GOLDEN / f"{name}.md").read_text()


def test_an_unknown_kind_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown report kind 'bench'"):
        report_kind({"kind": "bench"})


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the tlparse corpus is not on this machine")
def test_a_new_run_report_says_its_kind() -> None:
    report = build_report(collect_run([CORPUS / "comp_metrics.log"]))
    assert report["kind"] == "run"
    assert report_kind(report) == "run"


def test_the_rank_views_do_not_import_the_run_views_back() -> None:
    assert "pt2doctor.report.views" not in _imports(PACKAGE / "report" / "rank_views.py")


def test_unknown_and_missing_verdicts_rank_as_error() -> None:
    assert (
        verdict_rank(None)
        == verdict_rank("not run")
        == verdict_rank("new")
        == VERDICT_RANK["error"]
    )
    ranked = sorted(["pass", "crash", "fail", "nondeterministic", "error"], key=verdict_rank)
    assert ranked == ["pass", "nondeterministic", "fail", "error", "crash"]


def test_check_compares_the_torch_commit_like_diff_does() -> None:
    """One environment key list for ``check --expect-env`` and ``diff`` (check once missed
    ``torch_commit``)."""
    changes = env_changes({"torch_commit": "abc"}, {"torch_commit": "def"})
    assert changes == ["torch_commit: expected 'def', found 'abc'"]


def _emitted(path: Path) -> set[str]:
    """The event names a worker module passes to ``emit("name", ...)``."""
    return {
        node.args[0].value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "emit"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }


@pytest.mark.parametrize("worker", ["check/worker.py", "ablate/trial.py"])
def test_every_event_a_worker_emits_is_declared(worker: str) -> None:
    emitted = _emitted(PACKAGE / worker)
    assert emitted  # the scan finds the emitters
    assert emitted <= set(get_args(workers.EventName))
