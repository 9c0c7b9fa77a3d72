"""The Chrome trace reader against json: a real torch profiler export, read in chunks smaller
than one event and whole, and a trace in another layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pt2doctor.trace import chrome
from pt2doctor.trace.chrome import read_chrome_trace


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    path = tmp_path_factory.mktemp("chrome") / "trace.json"
    x = torch.randn(16, 16, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof, record_function("outer: {a},\n  {b}"):
        (x @ x).relu().sum().backward()
    prof.export_chrome_trace(str(path))
    return path


def _expected(path: Path) -> list[tuple[str, float, float, int]]:
    events = json.loads(path.read_text())["traceEvents"]
    return [
        (e["name"], e["ts"], e["dur"], e.get("args", {}).get("Sequence number", -1))
        for e in events
        if e.get("ph") == "X"
    ]


def _read(path: Path) -> list[tuple[str, float, float, int]]:
    trace = read_chrome_trace(path)
    return [
        (trace.names[trace.name[i]], trace.ts[i], trace.dur[i], trace.seq[i])
        for i in range(len(trace))
    ]


def test_every_complete_event_is_read_as_json_reads_it(exported: Path) -> None:
    expected = _expected(exported)
    assert any(name.startswith("outer: {a}") for name, *_ in expected)
    assert any(seq >= 0 for *_, seq in expected)  # autograd ops carry their sequence number
    assert _read(exported) == expected


def test_chunks_smaller_than_an_event_read_the_same(
    exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 97)
    assert _read(exported) == _expected(exported)


def test_a_trace_in_another_layout_is_read_whole(exported: Path, tmp_path: Path) -> None:
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(json.loads(exported.read_text())))  # one line, no indent
    assert _read(compact) == _expected(exported)
    bare = tmp_path / "bare.json"  # the JSON array form Chrome also opens
    bare.write_text(json.dumps(json.loads(exported.read_text())["traceEvents"]))
    assert _read(bare) == _expected(exported)


def test_a_file_that_is_not_a_trace_raises_value_error(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text('{"traceEvents": 3}')
    with pytest.raises(ValueError):
        read_chrome_trace(path)
