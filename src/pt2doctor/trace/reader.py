"""Streaming, tolerant TORCH_TRACE reader.

The log is read in large binary blocks and cut into *units*: an envelope line plus the
tab-indented payload lines after it. Every payload's md5 is checked; a payload is decoded and
kept only when the consumer asks for its kind, so memory does not grow with the log's size
(a 200 MB log is read with a few blocks of 8 MB in flight). Nothing in a log is fatal: what
cannot be read is counted in :class:`ParseStats`.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from pt2doctor.trace.records import (
    ENVELOPE_META_KEYS,
    KNOWN_KINDS,
    CompileId,
    ParseStats,
    TraceRecord,
)

# glog prefix: level, MMDD, time, thread id, source path:line, "] ".
GLOG_PREFIX = re.compile(rb"[VIWEC](\d{4}) (\d{2}:\d{2}:\d{2}\.\d+) +\d+ [^\]\n]*\] ")
# A unit ends at a newline that is not followed by a tab (the next line is not payload).
# A unit ends at a newline not followed by (blank lines and then) a payload tab. Blank lines are
# skipped like tlparse skips them: log shippers sometimes stutter one in, even inside a payload.
_UNIT_END = re.compile(rb"\n(?!\n*\t)")
_BLANK_LINES = re.compile(rb"\n{2,}")
_RANK_IN_NAME = re.compile(r"rank_(\d+)")
BLOCK_SIZE = 8 << 20

WantsPayload = Callable[[str, Any], bool]


def rank_from_filename(path: Path) -> int | None:
    """The rank a per-rank log's name gives (``dedicated_log_torch_trace_rank_3_x.log`` -> 3)."""
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


def _units(stream: BinaryIO) -> Iterator[tuple[bytes, int, int, bool]]:
    """Yield (buffer, start, end, complete) for each unit, without copying it out of the block.

    ``complete`` is False only for a last unit with no final newline (a cut-off log).
    """
    carry = b""
    while True:
        block = stream.read(BLOCK_SIZE)
        if not block:
            break
        buf = carry + block if carry else block
        start = 0
        # Newlines at the end of the block may be followed by a payload tab in the next block.
        tail = len(buf.rstrip(b"\n"))
        search_from = max(len(carry.rstrip(b"\n")) - 1, 0) if carry else 0
        for match in _UNIT_END.finditer(buf, search_from):
            end = match.start()
            if end >= tail:
                break
            yield buf, start, end, True
            start = end + 1
        carry = buf[start:]
    if carry:
        if carry.endswith(b"\n"):
            yield carry, 0, len(carry) - 1, True
        else:
            yield carry, 0, len(carry), False


def _resolve_stack(frames: Any, strings: dict[int, str]) -> None:
    """Replace interned file-name indexes in a list of stack frames, in place."""
    if not isinstance(frames, list):
        return
    for frame in frames:
        if isinstance(frame, dict):
            name = frame.get("filename")
            if isinstance(name, int):
                frame["filename"] = strings.get(name, f"<str {name}>")


def _as_int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


_compile_ids: dict[tuple[Any, ...], CompileId | None] = {}


def _compile_id(envelope: dict[str, Any]) -> CompileId | None:
    """The envelope's compile id (interned: a log has few distinct ones and many records)."""
    get = envelope.get
    key = (get("frame_id"), get("frame_compile_id"), get("attempt"), get("compiled_autograd_id"))
    cached = _compile_ids.get(key)
    if cached is not None or key in _compile_ids:
        return cached
    frame_id, fcid, attempt, ca_id = key
    if frame_id is None and fcid is None and ca_id is None:
        value = None
    else:
        value = CompileId(_as_int(frame_id), _as_int(fcid), _as_int(attempt) or 0, _as_int(ca_id))
    if len(_compile_ids) < 65536:
        _compile_ids[key] = value
    return value


def _check_digests(batch: list[tuple[bytes, Any, bool]]) -> tuple[int, int]:
    """(md5 mismatches, truncated records) of a batch of assembled payloads."""
    mismatches = truncated = 0
    for data, expected, complete in batch:
        if hashlib.md5(data).hexdigest() != expected:
            if complete:
                mismatches += 1
            else:
                truncated += 1
    return mismatches, truncated


def _assemble_with_blank_lines(raw: bytes, crlf: bool) -> tuple[bytes, int]:
    """Slow path: drop empty lines (not a payload's own empty lines, which are a lone tab)."""
    lines = raw.split(b"\n")
    if crlf:
        lines = [line.removesuffix(b"\r") for line in lines]
    kept = [line[1:] for line in lines if line]
    return b"\n".join(kept), len(lines) - len(kept)


class _DigestChecker:
    """Checks payload md5s on a worker thread, in batches.

    hashlib releases the GIL while it hashes, so on two cores the ~0.45 s of hashing a 200 MB
    log overlaps the parsing. At most ``MAX_PENDING`` batches wait, which bounds memory.
    """

    BATCH = 512
    MAX_PENDING = 4

    def __init__(self, stats: ParseStats) -> None:
        self.stats = stats
        self.batch: list[tuple[bytes, Any, bool]] = []
        self.pending: deque[Future[tuple[int, int]]] = deque()
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pt2doctor-md5")

    def add(self, data: bytes, expected: Any, complete: bool) -> None:
        self.batch.append((data, expected, complete))
        if len(self.batch) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.pending.append(self.pool.submit(_check_digests, self.batch))
            self.batch = []
        while len(self.pending) > self.MAX_PENDING:
            self._account(self.pending.popleft())

    def _account(self, future: Future[tuple[int, int]]) -> None:
        mismatches, truncated = future.result()
        self.stats.md5_mismatches += mismatches
        self.stats.truncated_records += truncated

    def close(self) -> None:
        self.flush()
        while self.pending:
            self._account(self.pending.popleft())
        self.pool.shutdown()


class _FileReader:
    """Per-file state: the interned string table, the rank, the line counter."""

    def __init__(self, path: Path, stats: ParseStats, wants_payload: WantsPayload) -> None:
        self.path = path
        self.stats = stats
        self.wants_payload = wants_payload
        self.strings: dict[int, str] = {}
        self.name_rank = rank_from_filename(path)
        self.stream = f"rank {self.name_rank}" if self.name_rank is not None else path.name
        self.lineno = 1
        self.digests = _DigestChecker(stats)

    def records(self, stream: BinaryIO) -> Iterator[TraceRecord]:
        stats = self.stats
        for buf, start, end, complete in _units(stream):
            lineno = self.lineno
            lines = buf.count(b"\n", start, end) + 1
            self.lineno += lines
            stats.lines += lines
            if start == end:
                stats.blank_lines += 1
                continue
            while start < end and buf[start] == 10:  # blank lines before an envelope
                stats.blank_lines += 1
                start += 1
            newline = buf.find(b"\n", start, end)
            header_end = end if newline < 0 else newline
            header = buf[start:header_end].rstrip(b"\r")
            body_lines = 0 if newline < 0 else lines - 1
            envelope, prefix = self._envelope(header, body_lines, complete)
            if envelope is None or prefix is None:
                continue
            payload = None
            if "has_payload" in envelope:
                crlf = buf[header_end - 1] == 13  # CRLF log: strip the CR of payload lines too
                payload = self._payload(envelope, buf, newline, end, complete, crlf)
            elif body_lines:
                blank = buf.count(b"\n\n", newline, end + 1)
                stats.blank_lines += blank
                stats.non_trace_lines += body_lines - blank
            record = self._record(envelope, payload, prefix, lineno)
            if record is not None:
                yield record

    def _envelope(
        self, header: bytes, body_lines: int, complete: bool
    ) -> tuple[dict[str, Any] | None, re.Match[bytes] | None]:
        """Decode the glog prefix and JSON envelope of one unit, counting what is broken."""
        stats = self.stats
        if not header:
            stats.non_trace_lines += body_lines
            return None, None
        prefix = GLOG_PREFIX.match(header)
        if prefix is None:
            stats.non_trace_lines += 1 + body_lines
            return None, None
        try:
            envelope = orjson.loads(header[prefix.end() :])
        except orjson.JSONDecodeError:
            envelope = None
        if not isinstance(envelope, dict):
            if complete:
                stats.bad_envelopes += 1
            else:
                stats.truncated_records += 1
            return None, None
        return envelope, prefix

    def _payload(
        self,
        envelope: dict[str, Any],
        buf: bytes,
        newline: int,
        end: int,
        complete: bool,
        crlf: bool,
    ) -> bytes:
        """Assemble the payload (tab and line ending stripped from each line); queue its md5."""
        self.stats.payloads += 1
        raw = buf[newline + 1 : end] if newline >= 0 else b""
        if raw[:1] == b"\n" or raw[-1:] == b"\n" or b"\n\n" in raw or (crlf and b"\n\r\n" in raw):
            data, blank = _assemble_with_blank_lines(raw, crlf)
            self.stats.blank_lines += blank
        elif crlf:
            data = raw[1:].replace(b"\r\n\t", b"\n").removesuffix(b"\r")
        else:
            data = raw[1:].replace(b"\n\t", b"\n")
        self.digests.add(data, envelope["has_payload"], complete)
        return data

    def _record(
        self,
        envelope: dict[str, Any],
        payload: bytes | None,
        prefix: re.Match[bytes],
        lineno: int,
    ) -> TraceRecord | None:
        stats = self.stats
        stats.records += 1
        kinds = [key for key in envelope if key not in ENVELOPE_META_KEYS]
        if not kinds:
            stats.unknown_kinds["<none>"] += 1
            return None
        kind = kinds[0]
        for extra in kinds[1:]:
            stats.unknown_fields[extra] += 1
        meta = envelope[kind]
        if kind == "str":
            if isinstance(meta, list) and len(meta) == 2 and isinstance(meta[1], int):
                self.strings[meta[1]] = str(meta[0])
            return None
        if kind not in KNOWN_KINDS:
            stats.unknown_kinds[kind] += 1
        if isinstance(meta, dict):
            _resolve_stack(meta.get("stack"), self.strings)
            _resolve_stack(meta.get("user_stack"), self.strings)
        rank = envelope.get("rank")
        if not isinstance(rank, int):
            rank = self.name_rank
        elif self.name_rank is not None and rank != self.name_rank:
            stats.other_rank += 1
        text = None
        if payload is not None and self.wants_payload(kind, meta):
            text = payload.decode("utf-8", "replace")
        day, clock = prefix.group(1), prefix.group(2)
        return TraceRecord(
            kind=kind,
            meta=meta,
            compile_id=_compile_id(envelope),
            rank=rank,
            stream=self.stream,
            lineno=lineno,
            timestamp=f"{day.decode()} {clock.decode()}",
            payload=text,
            has_payload=payload is not None,
        )


def _no_payloads(kind: str, meta: Any) -> bool:
    return False


def read_records(
    paths: list[Path],
    stats: ParseStats,
    wants_payload: WantsPayload = _no_payloads,
) -> Iterator[TraceRecord]:
    """Stream the records of one or more log files, in file order.

    ``wants_payload(kind, meta)`` says which payloads to decode and keep; all payloads are
    md5-checked either way. Counters go into ``stats``; this generator never raises on content.
    """
    for path in paths:
        stats.files += 1
        stats.bytes += path.stat().st_size
        reader = _FileReader(path, stats, wants_payload)
        try:
            with path.open("rb") as stream:
                yield from reader.records(stream)
        finally:
            reader.digests.close()
