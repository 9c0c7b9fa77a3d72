"""Read a torch profiler Chrome trace (``export_chrome_trace``, ``profile/trace.json``) into
compact columns: the complete ("X") events, with their name, category, thread, start,
duration, autograd sequence number and correlation id.

The file is read in chunks and each chunk's events parsed at once, so memory follows the
events kept (five numbers each, names interned), not the file: a profile of 10^6 events is
a few hundred MB of JSON. Kineto writes one event per ``{ ... }`` at two spaces of indent;
a trace in any other layout is parsed whole. A gzip-compressed trace (``trace.json.gz``, as
``tensorboard_trace_handler`` writes) is read through the decompressor, chunk by chunk.

A damaged trace still reads: a chunk that does not parse is parsed event by event, and what
still does not (an event cut off at the end of a truncated file, a name with a quote Kineto
did not escape) is counted in ``bad_events``.
"""

from __future__ import annotations

import gzip
import os
import threading
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

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
    header: dict[str, Any] = field(default_factory=dict)
    """The document's fields before ``traceEvents`` (``deviceProperties``: the GPUs,
    ``distributedInfo``: the rank), when the trace has them."""

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


def is_gzip(path: Path) -> bool:
    with path.open("rb") as stream:
        return stream.read(2) == b"\x1f\x8b"


def open_trace(path: Path) -> IO[bytes]:
    """The trace's bytes, decompressed when it is gzip."""
    if is_gzip(path):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def read_head(path: Path, size: int = CHUNK_BYTES) -> bytes:
    """The first ``size`` bytes of the trace, decompressed (raises OSError, EOFError)."""
    with open_trace(path) as stream:
        return stream.read(size)


def _header(head: bytes, start: int) -> dict[str, Any]:
    """The document's fields before ``"traceEvents"``, when they parse as an object."""
    before = head[:start].rstrip().rstrip(b",")
    try:
        header = orjson.loads(before + b"}") if before.lstrip().startswith(b"{") else {}
    except orjson.JSONDecodeError:
        return {}
    return header if isinstance(header, dict) else {}


def _kineto_chunks(path: Path) -> tuple[Iterator[bytes], dict[str, Any]] | None:
    """The traceEvents array of a Kineto trace as JSON arrays of whole events, and the
    document's header, or None when the file is not laid out as Kineto writes it."""
    head = read_head(path)
    start = head.find(_EVENTS_KEY)
    if start < 0:
        return None
    bracket = head.find(b"[", start)
    if bracket < 0:
        return None
    return _chunks(path, bracket + 1), _header(head, start)


def _chunks(path: Path, offset: int) -> Iterator[bytes]:
    with open_trace(path) as stream:
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
        if end < 0:  # another ending ("}]}"), or none: a truncated file
            close = pending.rfind(b"]")
            whole = close >= 0 and not pending[close + 1 :].strip(b" \n\r\t}")
            end = close - 1 if whole else len(pending) - 1
        if pending[: end + 1].strip():
            yield b"[" + pending[: end + 1] + b"]"


Columns = tuple[
    list[str], list[str], list[str], bytes, bytes, bytes, bytes, bytes, bytes, bytes, int
]


def _events(chunk: bytes) -> tuple[list[Any], int]:
    """A chunk's events, and how many of them did not parse: a chunk that is not valid JSON
    is parsed event by event (an event cut off by a truncated file, an unescaped quote)."""
    try:
        events = orjson.loads(chunk)
        return (events, 0) if isinstance(events, list) else ([], 1)
    except orjson.JSONDecodeError:
        pass
    events, bad = [], 0
    pieces = chunk[1:-1].split(_BETWEEN)  # each lost its event's "}" and the next one's "{"
    for index, piece in enumerate(pieces):
        text = (b"{" if index else b"") + piece + (b"}" if index < len(pieces) - 1 else b"")
        try:
            events.append(orjson.loads(text))
        except orjson.JSONDecodeError:
            bad += 1
    return events, bad


def add_chunk(trace: ChromeTrace, chunk: bytes, index: dict[str, dict[Any, int]]) -> None:
    events, bad = _events(chunk)
    trace.add_events(events, index)
    trace.bad_events += bad


def _parse(chunk: bytes) -> Columns:
    """One chunk's events as columns (a worker's job: plain data back to the parent)."""
    part = ChromeTrace()
    add_chunk(part, chunk, {"name": {}, "cat": {}, "thread": {}})
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
    import multiprocessing  # (~7 ms: only a large trace is read in parallel)

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
    found = _kineto_chunks(path)
    if found is not None:
        chunks, header = found
        workers = min(len(os.sched_getaffinity(0)), 2)
        if workers > 1 and not is_gzip(path) and path.stat().st_size > PARALLEL_BYTES:
            trace = _read_parallel(chunks, workers)
        else:
            for chunk in chunks:
                add_chunk(trace, chunk, index)
        trace.header = header
        if len(trace) or not trace.bad_events:
            return trace
        trace, index = ChromeTrace(), {"name": {}, "cat": {}, "thread": {}}
    with open_trace(path) as stream:
        document = orjson.loads(stream.read())
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list):
        raise ValueError("no traceEvents array")
    trace.add_events(events, index)
    if isinstance(document, dict):
        trace.header = {k: v for k, v in document.items() if k != "traceEvents"}
    return trace
