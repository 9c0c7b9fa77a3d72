"""Payload md5 checks: in the reader's own thread, or in a helper process for a big log.

Every payload's md5 is checked, but assembling the payloads of a 200 MB log (dropping each
line's tab) and hashing them costs more CPU than the rest of the read, and ``bytes.replace``
holds the GIL, so a thread cannot take that work off the reader's path. For a big log the
reader sends each payload's file offsets to a helper process that reads, assembles and hashes
it while the reader goes on parsing envelopes; a small log is checked inline.

Run as a script (``python -I -S digests.py LOG``), this file is that helper: it needs only the
standard library, so it starts in a few milliseconds. It reads batches of items (marshal) on
stdin and, at end of input, writes its counts (marshal) on stdout.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from typing import Any, BinaryIO

# (file offsets start, end of the raw payload, expected md5, record complete, CRLF line ends)
Item = tuple[int, int, Any, bool, bool]


def assemble(buf: bytes, start: int, end: int, crlf: bool) -> bytes:
    """The payload whose raw lines (a tab, the text, a line end) are ``buf[start:end]``."""
    return join_lines(buf[start + 1 : end], crlf)


def join_lines(body: bytes, crlf: bool) -> bytes:
    """The payload of its raw lines without the first line's tab."""
    if crlf:
        return body.replace(b"\r\n\t", b"\n").removesuffix(b"\r")
    return body.replace(b"\n\t", b"\n")


def assemble_with_blank_lines(raw: bytes, crlf: bool) -> tuple[bytes, int]:
    """Slow path: drop empty lines (not a payload's own empty lines, which are a lone tab)."""
    lines = raw.split(b"\n")
    if crlf:
        lines = [line.removesuffix(b"\r") for line in lines]
    kept = [line[1:] for line in lines if line]
    return b"\n".join(kept), len(lines) - len(kept)


def verify(
    buf: bytes, start: int, end: int, expected: Any, crlf: bool, data: bytes | None = None
) -> tuple[bool, int]:
    """(md5 matches, blank lines dropped) for the raw payload ``buf[start:end]``.

    ``data`` is the payload when the caller has assembled it already. A mismatch is retried
    without blank lines (a log shipper's stutter inside the payload), so the common case pays
    for no blank-line scan."""
    if data is None:
        data = assemble(buf, start, end, crlf)
    if hashlib.md5(data).hexdigest() == expected:
        return True, 0
    raw = buf[start:end]
    if b"\n\n" in raw or (crlf and b"\n\r\n" in raw):
        fixed, dropped = assemble_with_blank_lines(raw, crlf)
        return hashlib.md5(fixed).hexdigest() == expected, dropped
    return False, 0


class Tally:
    """What the checks found: md5 mismatches, truncated records, blank lines dropped."""

    def __init__(self) -> None:
        self.mismatches = self.truncated = self.blank = 0

    def count(self, ok: bool, blank: int, complete: bool) -> None:
        self.blank += blank
        if ok:
            return
        if complete:
            self.mismatches += 1
        else:
            self.truncated += 1

    def check_items(self, fd: int, items: list[Item]) -> None:
        """Check payloads given by their offsets in the open file ``fd``."""
        for start, end, expected, complete, crlf in items:
            # Read past the first tab: assembling then copies the payload once, not twice.
            body = os.pread(fd, end - start - 1, start + 1) if end > start else b""
            if hashlib.md5(join_lines(body, crlf)).hexdigest() == expected:
                continue
            raw = os.pread(fd, end - start, start)  # a mismatch (rare): the slow checks
            ok, blank = verify(raw, 0, len(raw), expected, crlf)
            self.count(ok, blank, complete)


def serve(path: str, requests: BinaryIO, replies: BinaryIO) -> None:
    """The helper process: check every batch of items, then write the counts."""
    tally = Tally()
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            try:
                batch = marshal.load(requests)
            except EOFError:
                break
            tally.check_items(fd, batch)
    finally:
        os.close(fd)
    marshal.dump((tally.mismatches, tally.truncated, tally.blank), replies)
    replies.flush()


if __name__ == "__main__":
    serve(sys.argv[1], sys.stdin.buffer, sys.stdout.buffer)
