"""Read a torch profiler Chrome trace (``export_chrome_trace``, ``profile/trace.json``) into
compact columns: the complete ("X") events, with their name, category, thread, start,
duration, autograd sequence number and correlation id.

The file is read in chunks and each chunk's events parsed at once, so memory follows the
events kept (five numbers each, names interned), not the file: a profile of 10^6 events is
a few hundred MB of JSON. Kineto writes one event per ``{ ... }`` at two spaces of indent;
a trace in any other layout is parsed whole.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

CHUNK_BYTES = 8 * 1024 * 1024
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

    def add(self, event: dict[str, Any], index: dict[str, dict[str, int]]) -> None:
        if event.get("ph") != "X":
            return
        try:
            ts = float(event["ts"])
            dur = float(event.get("dur", 0.0))
        except (KeyError, TypeError, ValueError):
            self.bad_events += 1
            return
        args = event.get("args")
        args = args if isinstance(args, dict) else {}
        self.name.append(_intern(self.names, index["name"], str(event.get("name", ""))))
        self.category.append(_intern(self.categories, index["cat"], str(event.get("cat", ""))))
        thread = f"{event.get('pid', '')}/{event.get('tid', '')}"
        self.thread.append(_intern(self.threads, index["thread"], thread))
        self.ts.append(ts)
        self.dur.append(dur)
        self.seq.append(_int(args.get("Sequence number")))
        self.correlation.append(_int(args.get("correlation")))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _intern(table: list[str], index: dict[str, int], value: str) -> int:
    found = index.get(value)
    if found is None:
        found = index[value] = len(table)
        table.append(value)
    return found


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


def read_chrome_trace(path: Path) -> ChromeTrace:
    """The complete events of the Chrome trace at ``path`` (raises OSError, ValueError)."""
    trace = ChromeTrace()
    index: dict[str, dict[str, int]] = {"name": {}, "cat": {}, "thread": {}}
    chunks = _kineto_chunks(path)
    if chunks is not None:
        try:
            for chunk in chunks:
                for event in orjson.loads(chunk):
                    if isinstance(event, dict):
                        trace.add(event, index)
            return trace
        except orjson.JSONDecodeError:
            trace = ChromeTrace()
            index = {"name": {}, "cat": {}, "thread": {}}
    document = orjson.loads(path.read_bytes())
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list):
        raise ValueError("no traceEvents array")
    for event in events:
        if isinstance(event, dict):
            trace.add(event, index)
        else:
            trace.bad_events += 1
    return trace
