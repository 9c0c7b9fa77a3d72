"""Envelopes whose fields hold values of the wrong type (valid JSON, wrong shape) must still be
reported, never crash: byte-level fuzzing cannot produce these, so this test swaps values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pt2doctor.report import build_report
from pt2doctor.trace.collect import collect_run

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "tlparse-inputs"
LOGS = ("inputs/comp_metrics.log", "inputs/comp_failure.log", "inputs/cache_hit_miss.log")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


def _swap(value: object, path: list[int], replacement: object) -> object:
    """Replace the ``path[0] % n``-th value of a dict (recursively) with ``replacement``."""
    if not isinstance(value, dict) or not value or not path:
        return replacement
    keys = sorted(value)
    key = keys[path[0] % len(keys)]
    return {**value, key: _swap(value[key], path[1:], replacement)}


def _report_of_mutant(log: Path, tmp_path: Path, line: int, path: list[int], value: object) -> dict:
    """Swap one value in the ``line``-th envelope of ``log``, then build the report."""
    lines = log.read_bytes().split(b"\n")
    envelopes = [i for i, text in enumerate(lines) if text[:1] in (b"V", b"I", b"W")]
    index = envelopes[line % len(envelopes)]
    prefix, _, body = lines[index].partition(b"] ")
    envelope = _swap(json.loads(body), path, value)
    lines[index] = prefix + b"] " + json.dumps(envelope).encode()
    mutant = tmp_path / "mutant.log"
    mutant.write_bytes(b"\n".join(lines))
    return build_report(collect_run([mutant]))


@pytest.mark.skipif(not CORPUS.exists(), reason="needs ../shared/corpus")
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    log=st.sampled_from(LOGS),
    line=st.integers(0, 10_000),
    path=st.lists(st.integers(0, 50), min_size=1, max_size=3),
    replacement=json_values,
)
def test_wrong_typed_values_never_crash(
    tmp_path: Path, log: str, line: int, path: list[int], replacement: object
) -> None:
    report = _report_of_mutant(CORPUS / log, tmp_path, line, path, replacement)
    assert report["parse_stats"]["records"] >= 1


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    program=st.sampled_from(("multi_guard", "item_break", "limit_hit")),
    line=st.integers(0, 10_000),
    path=st.lists(st.integers(0, 50), min_size=1, max_size=3),
    replacement=json_values,
)
def test_wrong_typed_values_in_torch_2_13_logs_never_crash(
    traced, tmp_path: Path, program: str, line: int, path: list[int], replacement: object
) -> None:
    (log,) = sorted(traced(program).iterdir())
    report = _report_of_mutant(log, tmp_path, line, path, replacement)
    assert report["parse_stats"]["records"] >= 1
