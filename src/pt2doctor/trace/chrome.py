"""Read a torch profiler Chrome trace (``export_chrome_trace``, ``profile/trace.json``) into
compact columns: the complete ("X") events, with their name, category, thread, start,
duration, autograd sequence number and correlation id.

The file is read in chunks and each chunk's events parsed at once, so memory follows the
events kept (five numbers each, names interned), not the file: a profile of 10^6 events is
a few hundred MB of JSON. Kineto writes one event per ``{ ... }`` at two spaces of indent;
a trace in any other layout is parsed whole.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

CHUNK_BYTES = 8 * 1024 * 1024
PARALLEL_BYTES = 64 * 1024 * 1024
"""Traces larger than this are parsed by worker processes."""
_EVENTS_KEY = b'"traceEvents"'
_BETWEEN = b"\n  },\n  {"
"""Kineto's separator between two events of the traceEvents array."""


@dataclass(slots=True)
class ChromeTrace:
    """The complete events of a trace, as columns (index i is one event)."""

    names: list[str] = field(default_factory=list)
    """Interned event names: ``name[i]`` indexes here."""
    threads: list[str] = field(default_factory=list)
    """Interned ``pid/tid`` of each thread: ``thread[i]`` indexes here."""
    categories: list[str] = field(default_factory=list)
    name: array[int] = field(default_factory=lambda: array("l"))
    category: array[int] = field(default_factory=lambda: array("l"))
    thread: array[int] = field(default_factory=lambda: array("l"))
    ts: array[float] = field(default_factory=lambda: array("d"))
    """Start, microseconds."""
    dur: array[float] = field(default_factory=lambda: array("d"))
    """Duration, microseconds."""
    seq: array[int] = field(default_factory=lambda: array("q"))
    """The autograd ``Sequence number`` (links a forward op to its backward), else -1."""
    correlation: array[int] = field(default_factory=lambda: array("q"))
    """``correlation`` (a CUDA launch and its kernel), else -1."""
    bad_events: int = 0

    def __len__(self) -> int:
        return len(self.ts)

    def add_events(self, events: list[Any], index: dict[str, dict[Any, int]]) -> None:
        """Append the complete events of ``events`` (a hot loop: names bound locally)."""
        names, cats, threads = index["name"], index["cat"], index["thread"]
        name_col, cat_col, thread_col = self.name.append, self.category.append, self.thread.append
        ts_col, dur_col, seq_col, corr_col = (
            self.ts.append,
            self.dur.append,
            self.seq.append,
            self.correlation.append,
        )
        for event in events:
            if type(event) is not dict or event.get("ph") != "X":
                if type(event) is not dict:
                    self.bad_events += 1
                continue
            ts = event.get("ts")
            dur = event.get("dur", 0.0)
            if type(ts) is not float or type(dur) is not float:  # orjson: numbers as written
                try:
                    ts, dur = float(ts), float(dur)  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    self.bad_events += 1
                    continue
            name = event.get("name", "")
            found = names.get(name)
            if found is None:
                found = names[name] = len(self.names)
                self.names.append(str(name))
            name_col(found)
            cat = event.get("cat", "")
            found = cats.get(cat)
            if found is None:
                found = cats[cat] = len(self.categories)
                self.categories.append(str(cat))
            cat_col(found)
            thread = (event.get("pid", ""), event.get("tid", ""))
            found = threads.get(thread)
            if found is None:
                found = threads[thread] = len(self.threads)
                self.threads.append(f"{thread[0]}/{thread[1]}")
            thread_col(found)
            ts_col(ts)
            dur_col(dur)
            args = event.get("args")
            if type(args) is dict:
                seq_col(_int(args.get("Sequence number")))
                corr_col(_int(args.get("correlation")))
            else:
                seq_col(-1)
                corr_col(-1)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _kineto_chunks(path: Path) -> Iterator[bytes] | None:
    """The traceEvents array of a Kineto trace as JSON arrays of whole events, or None when
    the file is not laid out as Kineto writes it."""
    with path.open("rb") as stream:
        head = stream.read(CHUNK_BYTES)
        start = head.find(_EVENTS_KEY)
        if start < 0:
            return None
        bracket = head.find(b"[", start)
        if bracket < 0:
            return None
    return _chunks(path, bracket + 1)


def _chunks(path: Path, offset: int) -> Iterator[bytes]:
    with path.open("rb") as stream:
        stream.seek(offset)
        pending = b""
        while True:
            block = stream.read(CHUNK_BYTES)
            if not block:
                break
            pending += block
            cut = pending.rfind(_BETWEEN)
            if cut < 0:
                continue
            yield b"[" + pending[: cut + 4] + b"]"  # up to and including the event's "}"
            pending = pending[cut + 6 :]  # from the next event's "{"
        end = pending.rfind(b"}\n  ]")  # the last event's end, then the array's
        end = end + 1 if end >= 0 else pending.rfind(b"]")
        if end >= 0 and pending[:end].strip():
            yield b"[" + pending[:end] + b"]"


Columns = tuple[
    list[str], list[str], list[str], bytes, bytes, bytes, bytes, bytes, bytes, bytes, int
]


def _parse(chunk: bytes) -> Columns:
    """One chunk's events as columns (a worker's job: plain data back to the parent)."""
    part = ChromeTrace()
    part.add_events(orjson.loads(chunk), {"name": {}, "cat": {}, "thread": {}})
    return (
        part.names,
        part.categories,
        part.threads,
        part.name.tobytes(),
        part.category.tobytes(),
        part.thread.tobytes(),
        part.ts.tobytes(),
        part.dur.tobytes(),
        part.seq.tobytes(),
        part.correlation.tobytes(),
        part.bad_events,
    )


def _merge(trace: ChromeTrace, columns: Columns, index: dict[str, dict[Any, int]]) -> None:
    names, cats, threads, name, cat, thread, ts, dur, seq, corr, bad = columns
    for table, own, column, raw, key in (
        (names, trace.names, trace.name, name, "name"),
        (cats, trace.categories, trace.category, cat, "cat"),
        (threads, trace.threads, trace.thread, thread, "thread"),
    ):
        ids = index[key]
        remap = []
        for value in table:
            found = ids.get(value)
            if found is None:
                found = ids[value] = len(own)
                own.append(value)
            remap.append(found)
        local = array("l")
        local.frombytes(raw)
        column.extend(map(remap.__getitem__, local))
    trace.ts.frombytes(ts)
    trace.dur.frombytes(dur)
    trace.seq.frombytes(seq)
    trace.correlation.frombytes(corr)
    trace.bad_events += bad


def _read_parallel(chunks: Iterator[bytes], workers: int) -> ChromeTrace:
    """Chunks parsed by ``workers`` processes, merged in order (fork when this process has
    no other thread, else spawn)."""
    method = "fork" if threading.active_count() == 1 else "spawn"
    trace = ChromeTrace()
    index: dict[str, dict[Any, int]] = {"name": {}, "cat": {}, "thread": {}}
    with multiprocessing.get_context(method).Pool(workers) as pool:
        for columns in pool.imap(_parse, chunks):
            _merge(trace, columns, index)
    return trace


def read_chrome_trace(path: Path) -> ChromeTrace:
    """The complete events of the Chrome trace at ``path`` (raises OSError, ValueError).
    A trace over PARALLEL_BYTES is parsed by as many processes as there are cores (two at
    most helps: the parent merges as fast as two parse)."""
    trace = ChromeTrace()
    index: dict[str, dict[Any, int]] = {"name": {}, "cat": {}, "thread": {}}
    chunks = _kineto_chunks(path)
    if chunks is not None:
        workers = min(len(os.sched_getaffinity(0)), 2)
        try:
            if workers > 1 and path.stat().st_size > PARALLEL_BYTES:
                return _read_parallel(chunks, workers)
            for chunk in chunks:
                trace.add_events(orjson.loads(chunk), index)
            return trace
        except orjson.JSONDecodeError:
            trace = ChromeTrace()
            index = {"name": {}, "cat": {}, "thread": {}}
    document = orjson.loads(path.read_bytes())
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list):
        raise ValueError("no traceEvents array")
    trace.add_events(events, index)
    return trace
