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
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_compile_ids: dict[tuple[Any, ...], CompileId | None] = {}


def _compile_id(envelope: dict[str, Any]) -> CompileId | None:
    """The envelope's compile id (interned: a log has few distinct ones and many records)."""
    get = envelope.get
    key = (
        _as_int(get("frame_id")),
        _as_int(get("frame_compile_id")),
        _as_int(get("attempt")),
        _as_int(get("compiled_autograd_id")),
    )
    cached = _compile_ids.get(key)
    if cached is not None or key in _compile_ids:
        return cached
    frame_id, fcid, attempt, ca_id = key
    if frame_id is None and fcid is None and ca_id is None:
        value = None
    else:
        value = CompileId(frame_id, fcid, attempt or 0, ca_id)
    if len(_compile_ids) < 65536:
        _compile_ids[key] = value
    return value


# (assembled payload, expected md5, complete, (block, start, end) of the raw payload, crlf,
#  the payload's line count as estimated from what assembling removed)
_Pending = tuple[bytes, Any, bool, tuple[bytes, int, int], bool, int]


def _check_digests(batch: list[_Pending]) -> tuple[int, int, int, int]:
    """(md5 mismatches, truncated records, blank lines, line-count correction) of a batch.

    A mismatch is retried without blank lines (a stutter inside the payload), so the common
    case pays for no blank-line scan; the line count estimated for a damaged payload is
    recounted."""
    mismatches = truncated = blank = lines = 0
    for data, expected, complete, (block, start, end), crlf, estimated in batch:
        if hashlib.md5(data).hexdigest() == expected:
            continue
        lines += (block.count(b"\n", start, end) + 1 if end > start else 0) - estimated
        raw = block[start:end]
        if b"\n\n" in raw or (crlf and b"\n\r\n" in raw):
            fixed, dropped = _assemble_with_blank_lines(raw, crlf)
            blank += dropped
            if hashlib.md5(fixed).hexdigest() == expected:
                continue
        if complete:
            mismatches += 1
        else:
            truncated += 1
    return mismatches, truncated, blank, lines


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
        self.batch: list[_Pending] = []
        self.pending: deque[Future[tuple[int, int, int, int]]] = deque()
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pt2doctor-md5")

    def add(self, item: _Pending) -> None:
        self.batch.append(item)
        if len(self.batch) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.pending.append(self.pool.submit(_check_digests, self.batch))
            self.batch = []
        while len(self.pending) > self.MAX_PENDING:
            self._account(self.pending.popleft())

    def _account(self, future: Future[tuple[int, int, int, int]]) -> None:
        mismatches, truncated, blank, lines = future.result()
        self.stats.lines += lines
        self.stats.md5_mismatches += mismatches
        self.stats.truncated_records += truncated
        self.stats.blank_lines += blank

    def close(self) -> None:
        self.flush()
        while self.pending:
            self._account(self.pending.popleft())
        self.pool.shutdown()


class _FileReader:
    """Per-file state: the interned string table, the rank, the line counter."""

    def __init__(
        self, path: Path, stats: ParseStats, wants_payload: WantsPayload, stream: str
    ) -> None:
        self.path = path
        self.stats = stats
        self.wants_payload = wants_payload
        self.strings: dict[int, str] = {}
        self.name_rank = rank_from_filename(path)
        self.stream = stream
        self.lineno = 1
        self.digests = _DigestChecker(stats)

    def records(self, stream: BinaryIO) -> Iterator[TraceRecord]:
        stats = self.stats
        for buf, start, end, complete in _units(stream):
            lineno = self.lineno
            if start == end:
                stats.blank_lines += 1
                self._lines(1)
                continue
            first = start
            while start < end and buf[start] == 10:  # blank lines before an envelope
                stats.blank_lines += 1
                start += 1
            newline = buf.find(b"\n", start, end)
            header_end = end if newline < 0 else newline
            header = buf[start:header_end].rstrip(b"\r")
            envelope, prefix = self._envelope(header, buf, newline, end, complete)
            if envelope is None or prefix is None:
                self._lines(buf.count(b"\n", first, end) + 1)
                continue
            payload = None
            lines = start - first + 1
            if "has_payload" in envelope:
                crlf = buf[header_end - 1] == 13  # CRLF log: strip the CR of payload lines too
                payload, payload_lines = self._payload(envelope, buf, newline, end, complete, crlf)
                lines += payload_lines
            elif newline >= 0:  # lines after an envelope that has no payload (rare)
                body = buf[newline + 1 : end].split(b"\n")
                blank = sum(1 for line in body if not line.strip(b"\r"))
                stats.blank_lines += blank
                stats.non_trace_lines += len(body) - blank
                lines += len(body)
            self._lines(lines)
            record = self._record(envelope, payload, header, lineno)
            if record is not None:
                yield record

    def _lines(self, count: int) -> None:
        self.lineno += count
        self.stats.lines += count

    def _envelope(
        self, header: bytes, buf: bytes, newline: int, end: int, complete: bool
    ) -> tuple[dict[str, Any] | None, re.Match[bytes] | None]:
        """Decode the glog prefix and JSON envelope of one unit, counting what is broken."""
        stats = self.stats
        if not header:
            stats.non_trace_lines += 0 if newline < 0 else buf.count(b"\n", newline, end)
            return None, None
        prefix = GLOG_PREFIX.match(header)
        if prefix is None:
            stats.non_trace_lines += 1 + (0 if newline < 0 else buf.count(b"\n", newline, end))
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
    ) -> tuple[bytes, int]:
        """Assemble the payload (tab and line ending stripped from each line) and queue its md5.

        Returns it with its line count, estimated from the bytes assembling removed (one tab per
        line, and a CR per line in a CRLF log) so the common case scans the payload only once."""
        self.stats.payloads += 1
        start = end if newline < 0 else newline + 1
        if start < end and (buf[start] == 10 or buf[end - 1] == 10):  # blank line at an edge
            data, blank = _assemble_with_blank_lines(buf[start:end], crlf)
            self.stats.blank_lines += blank
            lines = buf.count(b"\n", start, end) + 1
        elif crlf:
            data = buf[start + 1 : end].replace(b"\r\n\t", b"\n").removesuffix(b"\r")
            lines = (end - start - len(data) + 1) // 2  # the last line may lack its CR
        else:
            data = buf[start + 1 : end].replace(b"\n\t", b"\n")
            lines = end - start - len(data)
        if start == end:
            lines = 0
        item = (data, envelope["has_payload"], complete, (buf, start, end), crlf, lines)
        self.digests.add(item)
        return data, lines

    def _record(
        self,
        envelope: dict[str, Any],
        payload: bytes | None,
        header: bytes,
        lineno: int,
    ) -> TraceRecord | None:
        stats = self.stats
        stats.records += 1
        kind = ""
        for key in envelope:
            if key in ENVELOPE_META_KEYS:
                continue
            if kind:
                stats.unknown_fields[key] += 1
            else:
                kind = key
        if not kind:
            stats.unknown_kinds["<none>"] += 1
            return None
        meta = envelope[kind]
        if kind == "str":
            if isinstance(meta, list) and len(meta) == 2 and isinstance(meta[1], int):
                self.strings[meta[1]] = str(meta[0])
            return None
        if kind not in KNOWN_KINDS:
            stats.unknown_kinds[kind] += 1
        if isinstance(meta, dict) and ("stack" in meta or "user_stack" in meta):
            _resolve_stack(meta.get("stack"), self.strings)
            _resolve_stack(meta.get("user_stack"), self.strings)
        envelope_rank = _as_int(envelope.get("rank"))
        rank = self.name_rank if envelope_rank is None else envelope_rank
        if envelope_rank is not None and self.name_rank is not None and rank != self.name_rank:
            stats.other_rank += 1
        kept = payload if payload is not None and self.wants_payload(kind, meta) else None
        return TraceRecord(
            kind=kind,
            meta=meta,
            compile_id=_compile_id(envelope),
            rank=rank,
            stream=self.stream,
            lineno=lineno,
            timestamp=header[1:21].decode("ascii", "replace"),  # "MMDD HH:MM:SS.ffffff"
            payload_bytes=kept,
            has_payload=payload is not None,
            envelope_rank=envelope_rank,
        )


def _no_payloads(kind: str, meta: Any) -> bool:
    return False


def stream_names(paths: list[Path]) -> list[str]:
    """The stream of each log: ``rank N`` when the file name gives a rank, else the file name.

    Two logs whose names give the same rank (a restarted job, logs gathered twice) keep apart:
    the second and later ones are named by their file name (their compile ids would collide)."""
    names: list[str] = []
    for path in paths:
        rank = rank_from_filename(path)
        name = f"rank {rank}" if rank is not None else path.name
        if name in names:
            name = path.name if path.name not in names else str(path)
        names.append(name)
    return names


def read_records(
    paths: list[Path],
    stats: ParseStats,
    wants_payload: WantsPayload = _no_payloads,
) -> Iterator[TraceRecord]:
    """Stream the records of one or more log files, in file order.

    ``wants_payload(kind, meta)`` says which payloads to decode and keep; all payloads are
    md5-checked either way. Counters go into ``stats``; this generator never raises on content.
    """
    for path, stream_name in zip(paths, stream_names(paths), strict=True):
        stats.files += 1
        stats.bytes += path.stat().st_size
        reader = _FileReader(path, stats, wants_payload, stream_name)
        try:
            with path.open("rb") as stream:
                yield from reader.records(stream)
        finally:
            reader.digests.close()
