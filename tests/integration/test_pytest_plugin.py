"""The pytest plugin, run for real: a small test file through pytest in a subprocess
(``pytester``), with the plugin loaded from its ``pytest11`` entry point."""

from __future__ import annotations

import json

import pytest

from oracles import marker_in

pytestmark = pytest.mark.torch_run

pytest_plugins = ["pytester"]

TESTS = """
import pytest
import torch


def with_print(x):
    y = x.cos()
    print("inside")  # MARK:print
    return y + 1


def pure(x):
    return x.sin() * 2


def test_fixture_explains_a_break(pt2doctor):
    torch.compile(with_print, backend="eager")(torch.ones(3))
    pt2doctor.assert_no_graph_breaks()


def test_fixture_passes_a_pure_function(pt2doctor):
    torch.compile(pure, backend="eager")(torch.ones(3))
    pt2doctor.assert_no_graph_breaks()


@pytest.mark.pt2doctor_fullgraph
def test_fullgraph_fails_on_a_break():
    torch.compile(with_print, backend="eager")(torch.ones(3))


@pytest.mark.pt2doctor_fullgraph
def test_fullgraph_passes_pure_tensor_code():
    torch.compile(pure, backend="eager")(torch.ones(3))
"""


def test_fixture_marker_and_report_option(pytester: pytest.Pytester) -> None:
    test_file = pytester.makepyfile(test_compiled=TESTS)
    reports = pytester.path / "reports"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--pt2doctor-report={reports}"
    )
    result.assert_outcomes(passed=2, failed=2)
    print_line = marker_in(test_file, "print")  # the line as written to disk
    output = result.stdout.str()
    # The fixture's failure says where and why; fullgraph fails with Dynamo's own break error.
    assert "test_fixture_explains_a_break" in output and "print_or_logging" in output
    assert f"test_compiled.py:{print_line} in with_print" in output
    assert "test_fullgraph_fails_on_a_break" in output and "Unsupported" in output
    written = sorted(path.parent.name for path in reports.glob("*/report.json"))
    assert written == [
        "test_compiled.py_test_fixture_explains_a_break",
        "test_compiled.py_test_fixture_passes_a_pure_function",
    ]
    explained = json.loads((reports / written[0] / "report.json").read_text())
    (site,) = explained["graph_breaks"]
    assert (site["site"]["function"], site["site"]["line"], site["hits"]) == (
        "with_print",
        print_line,
        1,
    )
