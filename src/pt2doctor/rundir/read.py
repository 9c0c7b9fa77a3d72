"""Read a run directory back: manifest.json, probes.jsonl and the counters (tolerant of a
cut-off last line and of files a crash never wrote)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import orjson

from pt2doctor.rundir import CHECK_RESULTS, COUNTERS_DIR, MANIFEST, PROBES_FILE

if TYPE_CHECKING:  # the trace model is not needed to tell a run directory apart (report --help)
    from pt2doctor.trace.types import Manifest, ProbeData

_RESUME_KEY = re.compile(r"^(?P<file>.*):torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")


def read_jsonl(path: Path) -> list[Any] | None:
    """Every complete JSON line of ``path``, in order; a line a crash cut short (or any other
    line that does not decode) is skipped. None when the file cannot be read."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None
    found = []
    for line in lines:
        try:
            found.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return found


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


def is_check_dir(path: Path) -> bool:
    return path.is_dir() and (path / CHECK_RESULTS).is_file()


def load_manifest(run_dir: Path) -> Manifest:
    """The run directory's manifest; {} when it is missing or not a JSON object."""
    try:
        data = orjson.loads((run_dir / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return cast("Manifest", data) if isinstance(data, dict) else {}


def _break_key(key: str) -> tuple[str, str, int] | None:
    match = _RESUME_KEY.match(key)
    if match is None:
        return None
    return (match["file"], match["fn"], int(match["line"]))


def _numbers(value: Any) -> dict[str, float]:
    """A {name: number} mapping from a snapshot; anything else in it is skipped."""
    if not isinstance(value, dict):
        return {}
    return {
        str(key): number
        for key, number in value.items()
        if isinstance(number, (int, float)) and not isinstance(number, bool)
    }


def _integer(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _apply_snapshot(data: ProbeData, snapshots: dict[Any, dict[str, Any]]) -> None:
    """Sum the last snapshot of every process that counted something."""
    counting = [s for s in snapshots.values() if _numbers(s.get("graph_calls"))] or list(
        snapshots.values()
    )
    if counting:
        times = [t for s in counting if isinstance(t := s.get("t"), (int, float))]
        data.snapshot_t = max(times, default=0.0)
        data.complete = all(s.get("final") is True for s in counting)
    for snapshot in counting:
        for cid, calls in _numbers(snapshot.get("graph_calls")).items():
            data.graph_calls[cid] = data.graph_calls.get(cid, 0) + int(calls)
        for cid, seconds in _numbers(snapshot.get("graph_seconds")).items():
            data.graph_seconds[cid] = data.graph_seconds.get(cid, 0.0) + float(seconds)
        spread = snapshot.get("graph_spread")
        for cid, buckets in (spread if isinstance(spread, dict) else {}).items():
            into = data.graph_spread.setdefault(str(cid), {})
            for bucket, count in _numbers(buckets).items():
                if _integer(bucket):  # each process's calls added to the graph's histogram
                    into[int(bucket)] = into.get(int(bucket), 0) + int(count)
        for key, hits in _numbers(snapshot.get("break_hits")).items():
            site = _break_key(key)
            if site is not None:
                data.break_hits[site] = data.break_hits.get(site, 0) + int(hits)


def _fatal_error(run_dir: Path) -> list[str]:
    """The first fatal-signal report faulthandler wrote: error line + the crashing stack."""
    for log in sorted(run_dir.glob("faulthandler.*.log")):
        lines = log.read_text(errors="replace").splitlines()
        if not lines:
            continue
        current = next(
            (i for i, line in enumerate(lines) if line.startswith("Current thread")), None
        )
        stack = lines[current + 1 : current + 9] if current is not None else lines[1:9]
        return [lines[0], *[line.strip() for line in stack if line.strip()]]
    return []


def _counter_files(run_dir: Path) -> list[dict[str, Any]]:
    """The snapshot in each counters/<pid>.json (one per process); unreadable ones skipped."""
    found = []
    for path in sorted((run_dir / COUNTERS_DIR).glob("*.json")):
        try:
            snapshot = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(snapshot, dict):
            found.append(snapshot)
    return found


def _rank_of(event: dict[str, Any]) -> int | None:
    rank = event.get("rank")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def _add_event(data: ProbeData, event: dict[str, Any]) -> None:
    """Fold one non-snapshot event into ``data``."""
    kind = event.get("kind")
    if kind == "compiled" and isinstance(event.get("compile_id"), str):
        data.compiled.setdefault(event["compile_id"], event)
    elif kind == "guard_check" and isinstance(event.get("compile_id"), str):
        microseconds = event.get("us")
        if isinstance(microseconds, (int, float)) and not isinstance(microseconds, bool):
            data.guard_check_us[event["compile_id"]] = float(microseconds)
    elif kind == "exception":
        data.exceptions.append(event)
    elif kind == "graph_exception":
        data.graph_exceptions = [*data.graph_exceptions[-19:], event]  # the last 20
    elif kind == "compile_call" and len(data.compile_calls) < 100:
        data.compile_calls.append({k: v for k, v in event.items() if k not in ("kind", "t")})
    elif kind == "paired_calls" and len(data.paired_calls) < 10:
        data.paired_calls.append({k: v for k, v in event.items() if k != "kind"})
    elif kind == "plain_calls" and len(data.plain_calls) < 10:
        data.plain_calls.append({k: v for k, v in event.items() if k != "kind"})
    elif kind == "optimizer_trial" and len(data.optimizer_trials) < 10:
        data.optimizer_trials.append({k: v for k, v in event.items() if k not in ("kind", "t")})
    elif kind == "output_digest" and len(data.output_digests) < 128:
        data.output_digests.append({k: v for k, v in event.items() if k not in ("kind", "t")})
    elif kind == "compile_site" and len(data.compile_sites) < 500:
        file, line = event.get("file"), event.get("line")
        if isinstance(file, str) and file and isinstance(line, int):
            from pt2doctor.trace.types import SourceLine  # loaded already: ProbeData is

            data.compile_sites.setdefault(str(event.get("compile_id")), SourceLine(
                file, line, event.get("function"), event.get("code")))  # fmt: skip
    elif kind == "attribute_store" and len(data.attribute_stores) < 200:
        data.attribute_stores.append({k: v for k, v in event.items() if k != "kind"})
    elif kind == "module_hook" and len(data.module_hooks) < 200:
        data.module_hooks.append({k: v for k, v in event.items() if k != "kind"})
    elif kind == "cache_dir":
        if data.cache_dir_at_start is None:  # the first process's, before its first compile
            data.cache_dir_at_start = {
                k: v for k, v in event.items() if k not in ("kind", "t", "rank")
            }
    elif kind == "environment":
        data.environment = {k: v for k, v in event.items() if k not in ("kind", "t", "rank")}
    elif isinstance(kind, str) and kind.startswith("try_fix") and len(data.try_fix) < 20:
        data.try_fix.append({k: v for k, v in event.items() if k != "t"})
    elif kind in ("probes", "probe_error", "backend_override"):
        data.hooks[str(kind)] = {k: v for k, v in event.items() if k not in ("kind",)}


def load_probes(run_dir: Path) -> ProbeData | None:
    """The probes of a run directory; None when it has no probes file.

    Several processes append to one probes.jsonl (torchrun's workers, DataLoader workers): the
    totals sum every process's last snapshot (its counters/<pid>.json; older run directories
    kept snapshots in probes.jsonl, and still load), and events that carry a rank are also kept per
    rank in ``ProbeData.ranks`` (compile ids repeat across ranks, so heat must not be summed
    over them)."""
    from pt2doctor.trace.types import (
        ProbeData,  # only when a run is loaded (startup: report --help)
    )

    path = run_dir / PROBES_FILE
    if not path.is_file():
        return None
    data = ProbeData()
    snapshots: dict[Any, dict[str, Any]] = {}
    rank_snapshots: dict[int, dict[Any, dict[str, Any]]] = {}
    pid: Any = None
    for line in path.read_bytes().splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            data.bad_lines += 1
            continue
        if not isinstance(event, dict):
            data.bad_lines += 1
            continue
        rank = _rank_of(event)
        kind = event.get("kind")
        if kind == "start":
            pid = event.get("pid")
        elif kind == "snapshot":
            snapshots[event.get("pid", pid)] = event
            if rank is not None:
                rank_snapshots.setdefault(rank, {})[event.get("pid", pid)] = event
        _add_event(data, event)
        if rank is not None:
            _add_event(data.ranks.setdefault(rank, ProbeData()), event)
    for snapshot in _counter_files(run_dir):
        snapshots[snapshot.get("pid")] = snapshot
        if (rank := _rank_of(snapshot)) is not None:
            rank_snapshots.setdefault(rank, {})[snapshot.get("pid")] = snapshot
    _apply_snapshot(data, snapshots)
    for rank, per_process in rank_snapshots.items():
        _apply_snapshot(data.ranks.setdefault(rank, ProbeData()), per_process)
    data.fatal_error = _fatal_error(run_dir)
    return data
