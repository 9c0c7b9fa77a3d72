"""pytest plugin (entry point ``pytest11``): compile behaviour as part of a team's own tests.

- fixture ``pt2doctor``: a running :func:`pt2doctor.watch` for the test, with its assertions;
- marker ``@pytest.mark.pt2doctor_fullgraph``: every ``torch.compile`` in the test gets
  ``fullgraph=True``, so a block that should be pure tensor code fails on its first graph break
  (Dynamo's caches are reset before and after such a test);
- option ``--pt2doctor-report DIR``: writes each watched test's report.json under DIR.

Nothing here imports torch unless a test uses the fixture or the marker.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pt2doctor.report import dumps_report

FULLGRAPH_MARKER = "pt2doctor_fullgraph"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--pt2doctor-report",
        metavar="DIR",
        default=None,
        help="write the report.json of every test that uses the pt2doctor fixture under DIR",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{FULLGRAPH_MARKER}: compile with fullgraph=True in this test (a graph break fails it)",
    )


def _report_dir(node_id: str, root: Path) -> Path:
    return root / re.sub(r"[^A-Za-z0-9_.-]+", "_", node_id).strip("_")


@pytest.fixture
def pt2doctor(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A :class:`pt2doctor.inprocess.session.Watch` capturing this test's compiles."""
    from pt2doctor.inprocess.session import watch

    capture = watch()
    with capture:
        yield capture
    root = request.config.getoption("--pt2doctor-report")
    if root:
        target = _report_dir(request.node.nodeid, Path(root))
        target.mkdir(parents=True, exist_ok=True)
        (target / "report.json").write_bytes(dumps_report(capture.report()))
    capture.close()


@pytest.fixture(autouse=True)
def _pt2doctor_fullgraph(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker(FULLGRAPH_MARKER) is None:
        yield
        return
    import torch

    # Dynamo reuses code compiled earlier without fullgraph (fullgraph is not guarded): start
    # from empty caches so this test really traces with fullgraph=True.
    torch.compiler.reset()
    original = torch.compile

    def compile_fullgraph(model: Any = None, **kwargs: Any) -> Any:
        kwargs["fullgraph"] = True
        return original(model, **kwargs)

    torch.compile = compile_fullgraph
    try:
        yield
    finally:
        torch.compile = original
        torch.compiler.reset()
