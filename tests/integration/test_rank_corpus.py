"""``pt2doctor report DIR`` on the multi-rank logs of tlparse's corpus (../shared/corpus): the
multi-node path, where per-rank logs gathered from the nodes sit in one directory.

Each directory must report without a crash, with every log's rank identified as the log itself
gives it (the envelope's ``rank``, else the ``rank_N`` of the file name, read here by a minimal
scan of the raw lines), and divergences listed: name/envelope disagreements for exactly the
logs where the two differ, rank-specific recompiles for exactly the ranks that recompiled more
than the others, and none at all between byte-identical logs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pt2doctor.cli import main

pytestmark = pytest.mark.corpus

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "tlparse-inputs"
RANK_DIRS = (
    "multi_rank_logs",
    "multi_rank_runtime",
    "multi_rank_schedule",
    "multi_rank_messy_input",
)
RANK_IN_NAME = re.compile(r"rank_(\d+)")


def _envelopes(log: Path) -> list[dict[str, Any]]:
    """The JSON envelopes of a log's glog lines (payload and unreadable lines skipped)."""
    found = []
    for line in log.read_bytes().splitlines():
        if line.startswith(b"\t") or b"] {" not in line:
            continue
        try:
            found.append(json.loads(line.split(b"] ", 1)[1]))
        except ValueError:
            continue
    return found


def _raw_rank(log: Path) -> tuple[int | None, int | None]:
    """(envelope rank, file-name rank) of a log."""
    ranks = Counter(e["rank"] for e in _envelopes(log) if isinstance(e.get("rank"), int))
    match = RANK_IN_NAME.search(log.name)
    return (ranks.most_common(1)[0][0] if ranks else None, int(match[1]) if match else None)


def _raw_recompiles(log: Path) -> int:
    """Compiles after a frame's first: the envelope's frame_compile_id, else the metrics' id."""
    ids = set()
    for envelope in _envelopes(log):
        metrics = envelope.get("compilation_metrics")
        if not isinstance(metrics, dict):
            continue
        if "frame_compile_id" in envelope:
            ids.add((envelope.get("frame_id"), envelope["frame_compile_id"]))
        elif isinstance(metrics.get("compile_id"), str):
            ids.add(tuple(metrics["compile_id"].split("/")))
    return sum(1 for _, compile_index in ids if str(compile_index) != "0")


def _report(directory: Path, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "report.json"
    assert main(["report", str(directory), "--format", "json", "--json", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.fixture(params=RANK_DIRS)
def rank_dir(request: pytest.FixtureRequest) -> Path:
    directory = CORPUS / "inputs" / request.param
    if not directory.is_dir():
        pytest.skip(f"corpus not found at {directory}")
    return directory.resolve()


def _logs(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.stat().st_size and p.suffix == ".log")


def test_every_log_gets_its_rank(rank_dir: Path, tmp_path: Path, capsys) -> None:
    report = _report(rank_dir, tmp_path)
    capsys.readouterr()
    rows = {Path(r["path"]).name: r for r in report["ranks"]["per_rank"]}
    assert sorted(rows) == [log.name for log in _logs(rank_dir)]  # decoys are not ranks
    for log in _logs(rank_dir):
        envelope, name = _raw_rank(log)
        assert rows[log.name]["rank"] == (envelope if envelope is not None else name)
        assert rows[log.name]["name_rank"] == name
    mismatched = sorted(
        log.name
        for log in _logs(rank_dir)
        if None not in _raw_rank(log) and len(set(_raw_rank(log))) > 1
    )
    flagged = [d for d in report["ranks"]["divergences"] if d["kind"] == "rank_name_mismatch"]
    named = sorted(
        Path(line.split(": file name says")[0]).name for d in flagged for line in d["evidence"]
    )
    assert named == mismatched
    assert all(f["code"] != "rank_name_mismatch" for f in report["findings"]) == (not mismatched)


def test_divergences_are_listed_where_the_logs_differ(
    rank_dir: Path, tmp_path: Path, capsys
) -> None:
    report = _report(rank_dir, tmp_path)
    capsys.readouterr()
    logs = _logs(rank_dir)
    divergences = report["ranks"]["divergences"]
    if len({hashlib.md5(log.read_bytes()).hexdigest() for log in logs}) == 1:
        assert divergences == []  # identical logs compile alike
        return
    assert divergences
    codes = {d["code"] for d in divergences}
    assert codes <= {f["code"] for f in report["findings"]}  # every divergence is a finding
    recompiles = {log.name: _raw_recompiles(log) for log in logs}
    fewest = min(recompiles.values())
    label_to_file = {r["label"]: Path(r["path"]).name for r in report["ranks"]["per_rank"]}
    flagged = {
        label_to_file[label]
        for d in divergences
        if d["kind"] == "rank_specific_recompile"
        for label in d["labels"]
    }
    assert flagged == {name for name, count in recompiles.items() if count > fewest}
