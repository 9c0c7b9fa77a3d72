"""Streaming, tolerant TORCH_TRACE reader.

The log is read in large binary blocks and cut into *units* (:mod:`pt2doctor.trace.units`): an
envelope line plus the tab-indented payload lines after it. Every payload's md5 is checked (a big log's by a helper
process, see :mod:`pt2doctor.trace.payload_checks`); a payload is assembled and kept only when
the consumer asks for it, so a payload nobody reads costs little more than finding where it
ends, and memory does not grow with the log's size (a 200 MB log is read with one 8 MB block in
flight). Nothing in a log is fatal: what cannot be read is counted in :class:`ParseStats`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from pt2doctor.trace.digests import assemble, assemble_with_blank_lines
from pt2doctor.trace.payload_checks import payload_checker
from pt2doctor.trace.records import (
    ENVELOPE_META_KEYS,
    KNOWN_KINDS,
    CompileId,
    ParseStats,
    TraceRecord,
)
from pt2doctor.trace.units import units

# glog prefix: level, MMDD, time, thread id, source path:line, "] ".
GLOG_PREFIX = re.compile(rb"[VIWEC](\d{4}) (\d{2}:\d{2}:\d{2}\.\d+) +\d+ [^\]\n]*\] ")
_RANK_IN_NAME = re.compile(r"rank_(\d+)")

WantsPayload = Callable[[str, Any], bool]
PayloadPeek = Callable[[str, bytes], bool]
"""``peek(kind, head)``: a last look at the raw start of a payload ``wants_payload`` kept (the
first PEEK_BYTES, lines still tab-indented), which can still drop it before it is assembled."""
PEEK_BYTES = 1024


def rank_from_filename(path: Path) -> int | None:
    """The rank a per-rank log's name gives (``dedicated_log_torch_trace_rank_3_x.log`` -> 3)."""
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


def resolve_stack(frames: Any, strings: dict[int, str]) -> None:
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
_NO_ID = (None, None, None, None)


def _compile_id(raw: tuple[Any, ...]) -> CompileId | None:
    """The compile id of an envelope's four id fields (interned: few ids, many records).

    The cache is keyed by the raw values and their types (``true`` and ``1.0`` equal ``1`` as
    keys but are not ids), so a hit costs four lookups and no conversion."""
    if raw == _NO_ID:
        return None
    key = (*raw, *map(type, raw))
    try:
        return _compile_ids[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable value (a list, an object): not an id
        key = ()
    frame_id, fcid, attempt, ca_id = map(_as_int, raw)
    if frame_id is None and fcid is None and ca_id is None:
        value = None
    else:
        value = CompileId(frame_id, fcid, attempt or 0, ca_id)
    if key and len(_compile_ids) < 65536:
        _compile_ids[key] = value
    return value


class _FileReader:
    """Per-file state: the interned string table, the rank, the line counter."""

    def __init__(
        self,
        path: Path,
        stats: ParseStats,
        wants: tuple[WantsPayload, PayloadPeek | None],
        stream: str,
    ) -> None:
        self.path = path
        self.stats = stats
        self.wants_payload, self.peek = wants
        self.strings: dict[int, str] = {}
        self.name_rank = rank_from_filename(path)
        self.stream = stream
        self.lineno = 1
        self.digests = payload_checker(path, path.stat().st_size, stats)
        # The previous record's compile id fields and CompileId: most records repeat them.
        self.last_id: tuple[tuple[Any, ...], CompileId | None] = (_NO_ID, None)

    def records(self, stream: BinaryIO) -> Iterator[TraceRecord]:
        stats = self.stats
        for buf, offset, start, end, complete in units(stream):
            lineno = self.lineno
            if start == end:  # a blank line
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
            envelope = self._envelope(header, buf, newline, end, complete)
            if envelope is None:
                self._lines(buf.count(b"\n", first, end) + 1)
                continue
            kind, meta = self._kind(envelope)
            payload = None
            lines = start - first + 1
            has_payload = "has_payload" in envelope
            if has_payload:
                span = (end if newline < 0 else newline + 1, end)
                wanted = bool(kind) and self.wants_payload(kind, meta)
                if wanted and self.peek is not None:
                    wanted = self.peek(kind, buf[span[0] : span[0] + PEEK_BYTES])
                crlf = buf[header_end - 1] == 13  # CRLF log: strip the CR of payload lines too
                payload, payload_lines = self._payload(
                    buf, offset, span, envelope["has_payload"], (complete, crlf), wanted
                )
                lines += payload_lines
            elif newline >= 0:  # lines after an envelope that has no payload (rare)
                lines += self._stray_lines(buf[newline + 1 : end])
            self.lineno += lines
            stats.lines += lines
            if kind and kind != "str":
                yield self._record(envelope, kind, meta, payload, has_payload, header, lineno)

    def _lines(self, count: int) -> None:
        self.lineno += count
        self.stats.lines += count

    def _stray_lines(self, body: bytes) -> int:
        """Count the lines after an envelope that has no payload: blank or not trace."""
        lines = body.split(b"\n")
        blank = sum(1 for line in lines if not line.strip(b"\r"))
        self.stats.blank_lines += blank
        self.stats.non_trace_lines += len(lines) - blank
        return len(lines)

    def _envelope(
        self, header: bytes, buf: bytes, newline: int, end: int, complete: bool
    ) -> dict[str, Any] | None:
        """Decode the glog prefix and JSON envelope of one unit, counting what is broken."""
        stats = self.stats
        if not header:
            stats.non_trace_lines += 0 if newline < 0 else buf.count(b"\n", newline, end)
            return None
        prefix = GLOG_PREFIX.match(header)
        if prefix is None:
            stats.non_trace_lines += 1 + (0 if newline < 0 else buf.count(b"\n", newline, end))
            return None
        try:
            envelope = orjson.loads(header[prefix.end() :])
        except orjson.JSONDecodeError:
            envelope = None
        if not isinstance(envelope, dict):
            if complete:
                stats.bad_envelopes += 1
            else:
                stats.truncated_records += 1
            return None
        return envelope

    def _kind(self, envelope: dict[str, Any]) -> tuple[str, Any]:
        """The record's kind (the first key that is not envelope metadata) and its value.

        Interned strings (kind ``str``) go into the string table; frame stacks get their file
        names back from it. An empty kind means the envelope names none."""
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
            return kind, None
        meta = envelope[kind]
        if kind == "str":
            if isinstance(meta, list) and len(meta) == 2 and isinstance(meta[1], int):
                self.strings[meta[1]] = str(meta[0])
            return kind, meta
        if kind not in KNOWN_KINDS:
            stats.unknown_kinds[kind] += 1
        if isinstance(meta, dict) and ("stack" in meta or "user_stack" in meta):
            resolve_stack(meta.get("stack"), self.strings)
            resolve_stack(meta.get("user_stack"), self.strings)
        return kind, meta

    def _payload(
        self,
        buf: bytes,
        offset: int,
        span: tuple[int, int],
        expected: Any,
        flags: tuple[bool, bool],
        wanted: bool,
    ) -> tuple[bytes | None, int]:
        """The payload (assembled only when the consumer wants it) and its line count; its md5
        is checked either way, by the digest checker. ``flags``: (complete, CRLF)."""
        self.stats.payloads += 1
        start, end = span
        if start == end:
            self.digests.check(buf, offset, start, end, expected, flags)
            return (b"" if wanted else None), 0
        lines = buf.count(b"\n", start, end) + 1
        data = None
        if buf[start] == 10 or buf[end - 1] == 10:  # a blank line at an edge (rare)
            data, blank = assemble_with_blank_lines(buf[start:end], flags[1])
            self.stats.blank_lines += blank
            self.digests.check_here(buf, start, end, expected, flags, data)
        else:
            if wanted:
                data = assemble(buf, start, end, flags[1])
            self.digests.check(buf, offset, start, end, expected, flags, data)
        return (data if wanted else None), lines

    def _record(
        self,
        envelope: dict[str, Any],
        kind: str,
        meta: Any,
        payload: bytes | None,
        has_payload: bool,
        header: bytes,
        lineno: int,
    ) -> TraceRecord:
        get = envelope.get
        envelope_rank = _as_int(get("rank"))
        rank = self.name_rank if envelope_rank is None else envelope_rank
        if envelope_rank is not None and self.name_rank is not None and rank != self.name_rank:
            self.stats.other_rank += 1
        raw = (
            get("frame_id"),
            get("frame_compile_id"),
            get("attempt"),
            get("compiled_autograd_id"),
        )
        last_raw, compile_id = self.last_id  # the same objects (small ints, None): the same id
        if not (
            raw[0] is last_raw[0]
            and raw[1] is last_raw[1]
            and raw[2] is last_raw[2]
            and raw[3] is last_raw[3]
        ):
            compile_id = _compile_id(raw)
            self.last_id = (raw, compile_id)
        return TraceRecord(  # positional: the fields' order (faster than keywords)
            kind,
            meta,
            compile_id,
            rank,
            self.stream,
            lineno,
            header[1:21].decode("ascii", "replace"),  # "MMDD HH:MM:SS.ffffff"
            payload,
            has_payload,
            envelope_rank,
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
    peek: PayloadPeek | None = None,
) -> Iterator[TraceRecord]:
    """Stream the records of one or more log files, in file order.

    ``wants_payload(kind, meta)`` says which payloads to decode and keep (``peek`` can still
    drop one by its first bytes); all payloads are md5-checked either way. Counters go into
    ``stats``; this generator never raises on content.
    """
    for path, stream_name in zip(paths, stream_names(paths), strict=True):
        stats.files += 1
        stats.bytes += path.stat().st_size
        reader = _FileReader(path, stats, (wants_payload, peek), stream_name)
        try:
            with path.open("rb") as stream:
                yield from reader.records(stream)
        except BaseException:  # the consumer stopped early (GeneratorExit) or failed
            reader.digests.abandon()
            raise
        reader.digests.close()
