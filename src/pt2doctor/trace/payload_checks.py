"""Which process checks a log's payload md5s: the reader's own (a small log), or a helper.

See :mod:`pt2doctor.trace.digests` for why a big log's checks go to a helper process.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from pathlib import Path
from typing import IO, Any

from pt2doctor.errors import Pt2DoctorError
from pt2doctor.trace import digests
from pt2doctor.trace.digests import Item, Tally, verify
from pt2doctor.trace.records import ParseStats

try:
    import fcntl
except ImportError:  # not on Windows: the pipe keeps its default size
    fcntl = None  # type: ignore[assignment]

# A log at least this big has its payloads checked by a helper process (digests.py); below
# it, starting one costs more than the checks.
PROCESS_MIN_BYTES = 16 << 20


class InlineChecker:
    """Checks each payload's md5 as it is read, in the reader's thread."""

    def __init__(self, stats: ParseStats) -> None:
        self.stats = stats
        self.tally = Tally()

    def check(
        self,
        buf: bytes,
        offset: int,
        start: int,
        end: int,
        expected: Any,
        flags: tuple[bool, bool],
        data: bytes | None = None,
    ) -> None:
        """Check the raw payload ``buf[start:end]`` (``buf`` begins at file offset ``offset``);
        ``flags`` is (record complete, CRLF line ends); ``data``, the payload if the reader
        assembled it already (a checker may use it or assemble its own)."""
        self.check_here(buf, start, end, expected, flags, data)

    def check_here(
        self,
        buf: bytes,
        start: int,
        end: int,
        expected: Any,
        flags: tuple[bool, bool],
        data: bytes | None,
    ) -> None:
        """Check in this process, with ``data`` as the payload when given (the reader's own
        assembly, e.g. without the blank lines at its edges)."""
        complete, crlf = flags
        ok, blank = verify(buf, start, end, expected, crlf, data)
        self.tally.count(ok, blank, complete)

    def close(self) -> None:
        """Add what the checks found to the stats (once every payload has been checked)."""
        tally, stats = self.tally, self.stats
        stats.md5_mismatches += tally.mismatches
        stats.truncated_records += tally.truncated
        stats.blank_lines += tally.blank
        self.tally = Tally()

    def abandon(self) -> None:
        """The consumer stopped reading early: count what was checked, check nothing more."""
        self.close()


class ProcessChecker(InlineChecker):
    """Sends each payload's offsets to the helper process (digests.py), in batches; the
    reader's thread only checks the rare payload it had to assemble in its own way.

    The pipe is widened to 1 MiB where Linux allows, so the reader rarely waits for the helper;
    when it does, that bounds the memory the batches take."""

    BATCH = 2048

    def __init__(self, path: Path, stats: ParseStats) -> None:
        import subprocess  # here: a small log (and report --help) never pays for the import

        super().__init__(stats)
        self.batch: list[Item] = []
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", digests.__file__, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        _widen_pipe(self.process.stdin)

    def check(
        self,
        buf: bytes,
        offset: int,
        start: int,
        end: int,
        expected: Any,
        flags: tuple[bool, bool],
        data: bytes | None = None,
    ) -> None:
        self.batch.append((offset + start, offset + end, expected, *flags))
        if len(self.batch) >= self.BATCH:
            self._send()

    def _send(self) -> None:
        assert self.process.stdin is not None
        try:
            marshal.dump(self.batch, self.process.stdin)
        except (OSError, ValueError) as error:
            raise self._failed() from error
        self.batch = []

    def close(self) -> None:
        if self.batch:
            self._send()
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.close()
            mismatches, truncated, blank = marshal.load(self.process.stdout)
        except (OSError, EOFError, ValueError, TypeError) as error:
            raise self._failed() from error
        finally:
            self.process.stdout.close()
            self.process.wait()
        self.tally.mismatches += mismatches
        self.tally.truncated += truncated
        self.tally.blank += blank
        super().close()

    def abandon(self) -> None:  # the helper's counts are lost with it
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def _failed(self) -> Pt2DoctorError:
        self.process.kill()
        code = self.process.wait()
        return Pt2DoctorError(f"the md5 checker process stopped (exit {code}): log not checked")


def _widen_pipe(pipe: IO[bytes] | None) -> None:
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if pipe is None or set_size is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(pipe.fileno(), set_size, 1 << 20)


def payload_checker(path: Path, size: int, stats: ParseStats) -> InlineChecker:
    """The helper process for a big log (inline checks when it cannot start)."""
    if size >= PROCESS_MIN_BYTES and sys.executable and hasattr(os, "pread"):
        try:
            return ProcessChecker(path, stats)
        except OSError:
            pass
    return InlineChecker(stats)
