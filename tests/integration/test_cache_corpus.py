"""Cache lookups and cold start on every log of tlparse's test corpus (torch 2.5 .. 2.9 dev
builds, CPU and CUDA): each compile's cache statuses, keys and bypass reasons must match the raw
artifacts, read here by a minimal independent reader (tests/oracles.py), and every log must
give a cold-start section without error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pt2doctor.analysis.coldstart.cache_diff import differing_components
from pt2doctor.report import build_report
from pt2doctor.trace.collect import collect_run

pytestmark = pytest.mark.corpus

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "tlparse-inputs"
RANK = {"hit": 0, "bypass": 1, "miss": 2}


def _logs() -> list[str]:
    if not CORPUS.is_dir():
        return []
    return sorted(
        path.relative_to(CORPUS).as_posix()
        for path in CORPUS.rglob("*")
        if path.suffix in {".log", ".txt"} and path.is_file() and path.stat().st_size > 0
    )


def _raw_artifacts(log: Path) -> list[tuple[dict[str, Any], str]]:
    """(envelope, payload) of every artifact record; other lines (a corpus log holds plain
    text and corrupted records too) are skipped."""
    records: list[tuple[dict[str, Any], list[str]]] = []
    current: list[str] | None = None
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("\t"):
            if current is not None:
                current.append(line[1:])
        elif '] {"artifact"' in line:
            current = []
            records.append((json.loads(line.split("] ", 1)[1]), current))
        else:
            current = None
    return [(envelope, "\n".join(payload)) for envelope, payload in records]


def _raw_worst(log: Path) -> dict[str, dict[str, tuple[str, str | None, str | None]]]:
    """compile id -> cache -> (worst status, its key, its bypass reason's first line)."""
    worst: dict[str, dict[str, tuple[str, str | None, str | None]]] = {}
    for envelope, payload in _raw_artifacts(log):
        name = (envelope.get("artifact") or {}).get("name", "")
        prefix, _, status = name.rpartition("_cache_")
        if prefix not in ("fx_graph", "aotautograd") or status not in RANK:
            continue
        if envelope.get("frame_id") is None:
            continue
        cid = f"{envelope['frame_id']}/{envelope['frame_compile_id']}"
        if envelope.get("attempt"):
            cid += f"_{envelope['attempt']}"
        body = json.loads(payload) if payload.strip() else {}
        reason = (body.get("cache_bypass_reason") or "").strip().splitlines()
        entry = (status, body.get("key") or None, reason[0][:200] if reason else None)
        old = worst.setdefault(cid.split("_")[0], {}).get(prefix)
        if old is None or RANK[status] > RANK[old[0]]:
            worst[cid.split("_")[0]][prefix] = entry
    return worst


@pytest.mark.parametrize("name", _logs())
def test_cache_statuses_match_the_raw_artifacts(name: str) -> None:
    log = CORPUS / name
    report = build_report(collect_run([log]))
    reported = {
        row["compile_id"]: {
            cache: (entry["status"], entry["key"], entry["bypass_reason"])
            for cache, entry in row["caches"].items()
            if cache in ("fx_graph", "aotautograd")
        }
        for row in report["compiles"]
    }
    expected = _raw_worst(log)
    assert {cid: caches for cid, caches in reported.items() if caches} == expected
    section = report["cold_start"]
    assert section["verdict"]
    assert section["warm_estimate_s"] >= 0


def test_bypass_reason_and_components_are_decoded() -> None:
    report = build_report(collect_run([CORPUS / "inputs" / "cache_hit_miss.log"]))
    (row,) = [row for row in report["compiles"] if row["compile_id"] == "1/0"]
    assert row["caches"]["aotautograd"]["status"] == "bypass"
    assert row["caches"]["aotautograd"]["bypass_reason"].startswith(
        "Unsupported call_function target flex_attention"
    )
    shared = report["cold_start"]["key_components"]["fx_graph"]
    assert shared["inductor_config[fx_graph_cache]"][1] == "True"
    assert report["cold_start"]["state"] == "partial"


def test_graphs_of_the_same_frame_differ_in_their_input_components() -> None:
    """rank_1 of multi_rank_logs: 15 compiles of one frame, recompiled for new sizes."""
    log = CORPUS / "inputs" / "multi_rank_logs" / "dedicated_log_torch_trace_rank_1.log"
    report = build_report(collect_run([log]))
    shared = report["cold_start"]["key_components"]["fx_graph"]
    first, second = report["compiles"][0], report["compiles"][1]
    own = [row["caches"]["fx_graph"].get("components", {}) for row in (first, second)]
    names = {c["name"] for c in differing_components({**shared, **own[0]}, {**shared, **own[1]})}
    assert names and all(n == "gm" or n.startswith("example_inputs") for n in names)


def _raw_components(log: Path, compile_id: str) -> dict[str, str]:
    """name -> hash of the FX graph key components of one compile, from the raw artifact."""
    for envelope, payload in _raw_artifacts(log):
        name = envelope["artifact"].get("name", "")
        cid = f"{envelope.get('frame_id')}/{envelope.get('frame_compile_id')}"
        if name.startswith("fx_graph_cache_") and cid == compile_id:
            components = json.loads(payload).get("components", [])
            return dict(
                (item.split("] ", 1)[1].split(": ", 1)[0], item[1:].split("]", 1)[0])
                for item in components
            )
    raise AssertionError(f"no fx_graph lookup for {compile_id} in {log.name}")


def _compile_id(report: dict[str, Any], stream: str, cause: dict[str, Any]) -> str:
    """The compile id of the graph a cause names (``fn (file:line) variant N cache``) in a stream."""
    function, variant = cause["subject"].split(" (")[0], int(cause["subject"].split()[-2])
    rows = [r for r in report["compiles"] if r["stream"] == stream and r["function"] == function]
    return str(rows[variant]["compile_id"])


def test_ranks_that_missed_are_explained_by_their_key_components() -> None:
    """multi_rank_runtime: every rank missed; the ranks' logs differ in Inductor config."""
    folder = CORPUS / "inputs" / "multi_rank_runtime"
    report = build_report(collect_run(sorted(folder.glob("*.log"))))
    causes = [
        c for c in report["cold_start"]["rank_miss_causes"] if c["subject"].endswith("fx_graph")
    ]
    assert causes
    paths = {info["stream"]: info["path"] for info in report["ranks"]["per_rank"]}
    for cause in causes:
        a = _raw_components(
            Path(paths[cause["against"]]), _compile_id(report, cause["against"], cause)
        )
        b = _raw_components(
            Path(paths[cause["stream"]]), _compile_id(report, cause["stream"], cause)
        )
        expected = {name for name in a.keys() | b.keys() if a.get(name) != b.get(name)}
        assert {c["name"] for c in cause["components"]} == expected


def test_triton_autotune_cache_follows_the_kernels_states() -> None:
    """A CUDA log: each compile's ``triton_autotune`` status from its kernels' autotune states."""
    log = CORPUS / "inputs" / "inductor_provenance_jit_cuda_log.txt"
    states: dict[str, set[str]] = {}
    for envelope, payload in _raw_artifacts(log):
        if envelope["artifact"].get("name") == "triton_kernel_info":
            cid = f"{envelope.get('frame_id')}/{envelope.get('frame_compile_id')}"
            kernels = json.loads(payload).values()
            states.setdefault(cid, set()).update(k.get("autotune_cache_state") for k in kernels)
    assert states
    report = build_report(collect_run([log]))
    for row in report["compiles"]:
        tuned = states.get(row["compile_id"], set()) & {"hit", "miss"}
        expected = ("miss" if "miss" in tuned else "hit") if tuned else None
        assert (row["caches"].get("triton_autotune") or {}).get("status") == expected
