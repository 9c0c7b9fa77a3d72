"""The reader's unit splitter: a log read in large binary blocks and cut into *units* (an
envelope line plus the tab-indented payload lines after it), each yielded where it lies in its
block, uncopied; only a unit that straddles two blocks is joined (see :func:`units`)."""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from typing import BinaryIO

# A unit ends at a newline not followed by (blank lines and then) a payload tab. Blank lines are
# skipped like tlparse skips them: log shippers sometimes stutter one in, even inside a payload.
_UNIT_END = re.compile(rb"\n(?!\n*\t)")
BLOCK_SIZE = 8 << 20


def units(stream: BinaryIO) -> Iterator[tuple[bytes, int, int, int, bool]]:
    """Yield (buffer, its file offset, start, end, complete) for each unit, without copying it
    out of the block.

    ``complete`` is False only for a last unit with no final newline (a cut-off log). Only the
    unit that straddles two blocks is copied (with the start of the next block); the blocks
    themselves are searched where they lie.
    """
    carry = b""
    carry_at = 0  # the file offset of carry's first byte
    while True:
        block = stream.read(BLOCK_SIZE)
        if not block:
            break
        start = 0
        if carry:
            start, carry, carry_at = yield from straddling(carry, carry_at, block)
            if start < 0:  # no unit ended in this block: it is all carried to the next
                continue
        block_at = carry_at + len(carry)  # the file offset of the block's first byte
        tail = content_end(block)
        for match in _UNIT_END.finditer(block, start):
            end = match.start()
            if end >= tail:  # newlines at the end may be followed by a tab in the next block
                break
            yield block, block_at, start, end, True
            start = end + 1
        carry, carry_at = block[start:], block_at + start
    if carry:
        if carry.endswith(b"\n"):
            yield carry, carry_at, 0, len(carry) - 1, True
        else:
            yield carry, carry_at, 0, len(carry), False


def content_end(buf: bytes) -> int:
    """The length of ``buf`` without its final newlines (``len(buf.rstrip(b"\\n"))`` uncopied)."""
    end = len(buf)
    while end and buf[end - 1] == 10:
        end -= 1
    return end


# How much of the next block is joined to a carried unit at first (grown until a unit ends).
JOIN_FIRST = 1 << 16


def straddling(
    carry: bytes, carry_at: int, block: bytes
) -> Generator[tuple[bytes, int, int, int, bool], None, tuple[int, bytes, int]]:
    """Yield the units that begin in ``carry`` (the unfinished end of the block before), joined
    to as much of ``block`` as they need. Returns (where the first unit that begins in
    ``block`` starts, or -1 when none does, the carry, its file offset)."""
    start = 0
    search_from = max(content_end(carry) - 1, 0)
    size = JOIN_FIRST
    while True:
        joined = carry + block[:size]
        tail = content_end(joined)
        for match in _UNIT_END.finditer(joined, max(search_from, start)):
            end = match.start()
            if end >= tail:
                break
            yield joined, carry_at, start, end, True
            start = end + 1
            if start >= len(carry):
                return start - len(carry), carry, carry_at
        if size >= len(block):
            return -1, joined[start:], carry_at + start
        size *= 4
