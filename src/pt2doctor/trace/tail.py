"""Read TORCH_TRACE logs while they grow (``pt2doctor report --follow``): each poll reads only
the bytes written since the last one.

A record is an envelope line (``V1201 12:00:00.000 123 file.py:1] {json}``) and the
tab-indented payload lines after it; a poll hands over the records whose next envelope has
started (the last one may still be growing: it waits, and :meth:`Tail.flush` gives it when the
job is over). Rank files that appear later are picked up; a file that shrinks was truncated or
rotated, and is read again from its start (counted in ``restarts``). Interned strings (``str``
records) resolve stack file names per file, as the full reader does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pt2doctor.trace.reader import GLOG_PREFIX, resolve_stack

_ENVELOPE_KEYS = frozenset(
    {"frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "rank", "has_payload",
     "stack"}
)  # fmt: skip


@dataclass(slots=True)
class LiveRecord:
    """One record: its log (stream), kind, metadata, payload and compile id."""

    stream: str
    kind: str
    meta: Any
    payload: str | None
    compile_id: str | None
    clock: str
    """The glog time of day (``12:00:00.123456``)."""


@dataclass(slots=True)
class _File:
    offset: int = 0
    pending: bytes = b""
    strings: dict[int, str] = field(default_factory=dict)


class Tail:
    """The logs at ``path`` (one file, or every ``*.log`` / ``*.txt`` in a directory)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.files: dict[Path, _File] = {}
        self.restarts = 0
        self.bytes_read = 0

    def _paths(self) -> list[Path]:
        if self.path.is_dir():
            return sorted(p for p in self.path.iterdir()
                          if p.is_file() and p.suffix in (".log", ".txt"))  # fmt: skip
        return [self.path] if self.path.is_file() else []

    def poll(self) -> list[LiveRecord]:
        """The records completed since the last poll, file by file."""
        found: list[LiveRecord] = []
        for path in self._paths():
            state = self.files.setdefault(path, _File())
            try:
                size = path.stat().st_size
                if size < state.offset:  # truncated or rotated: read it again from the start
                    self.restarts += 1
                    self.files[path] = state = _File()
                if size == state.offset:
                    continue
                with path.open("rb") as stream:
                    stream.seek(state.offset)
                    data = stream.read(size - state.offset)
            except OSError:
                continue
            state.offset += len(data)
            self.bytes_read += len(data)
            buffer = state.pending + data
            cut = _last_envelope_start(buffer)
            state.pending = buffer[cut:]
            found += self._records(path, state, buffer[:cut])
        return found

    def flush(self) -> list[LiveRecord]:
        """Every record left, the last one too (the job is over)."""
        found = self.poll()
        for path, state in self.files.items():
            found += self._records(path, state, state.pending)
            state.pending = b""
        return found

    def _records(self, path: Path, state: _File, data: bytes) -> list[LiveRecord]:
        found: list[LiveRecord] = []
        header: bytes | None = None
        payload: list[bytes] = []
        for line in data.split(b"\n"):
            if line.startswith(b"\t") and header is not None:
                payload.append(line[1:])
                continue
            if header is not None:
                record = self._record(path.name, state, header, payload)
                if record is not None:
                    found.append(record)
            header, payload = (line if line.strip() else None), []
        if header is not None:
            record = self._record(path.name, state, header, payload)
            if record is not None:
                found.append(record)
        return found

    @staticmethod
    def _record(
        stream: str, state: _File, header: bytes, payload: list[bytes]
    ) -> LiveRecord | None:
        prefix = GLOG_PREFIX.match(header.rstrip(b"\r"))
        if prefix is None:
            return None
        try:
            envelope = orjson.loads(header[prefix.end() :])
        except orjson.JSONDecodeError:
            return None
        if not isinstance(envelope, dict):
            return None
        kind = next((key for key in envelope if key not in _ENVELOPE_KEYS), "")
        meta = envelope.get(kind)
        if kind == "str":
            if isinstance(meta, list) and len(meta) == 2 and isinstance(meta[1], int):
                state.strings[meta[1]] = str(meta[0])
            return None
        if isinstance(meta, dict):
            resolve_stack(meta.get("stack"), state.strings)
            resolve_stack(meta.get("user_stack"), state.strings)
        frame, compile = envelope.get("frame_id"), envelope.get("frame_compile_id")
        cid = f"{frame}/{compile}" if isinstance(frame, int) and isinstance(compile, int) else None
        text = b"\n".join(payload).decode("utf-8", "replace") if payload else None
        return LiveRecord(stream, kind, meta, text, cid, prefix.group(2).decode())


def _last_envelope_start(buffer: bytes) -> int:
    """Where the last record begins: after the last newline followed by a line that is not a
    payload line, so that every record before it is whole."""
    index = len(buffer)
    while True:
        newline = buffer.rfind(b"\n", 0, index)
        if newline < 0:
            return 0
        if newline + 1 < len(buffer) and buffer[newline + 1 : newline + 2] != b"\t":
            return newline + 1
        index = newline


class TailThread:
    """A :class:`Tail` polled by a daemon thread every ``interval_s``, each batch of records
    handed to ``handle(records, final)`` (report/live.py ``LiveFollower``: ``run --live``,
    ``watch``'s metrics); :meth:`stop` hands over what is left, the last record too, with
    ``final`` true. ``before``: called before each read (a writer's flush)."""

    def __init__(
        self,
        path: Path,
        handle: Callable[[list[LiveRecord], bool], object],
        interval_s: float = 0.5,
        before: Callable[[], None] | None = None,
        name: str = "pt2doctor-tail",
    ) -> None:
        import threading

        self.tail, self.handle, self.interval_s, self.before = (
            Tail(path),
            handle,
            interval_s,
            before,
        )
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _read(self, final: bool = False) -> None:
        if self.before is not None:
            self.before()
        self.handle(self.tail.flush() if final else self.tail.poll(), final)

    def _run(self) -> None:
        while not self.done.wait(self.interval_s):
            self._read()

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=5)
        self._read(final=True)
