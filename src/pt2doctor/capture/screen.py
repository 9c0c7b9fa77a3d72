"""``run --live`` at a terminal: one status line kept at the bottom while the program's output
and the explained events scroll above it.

Every write to the terminal goes through :class:`Screen`, under one lock: the program's
stdout and stderr chunks (capture/runner.py's pumps) and the event lines (its follower).
Before a write the status line is erased (``\\r`` and erase-line on stderr); after it, the
status is drawn again, unless the write left a line open (a progress bar, a prompt without
its newline): then the status stays down until that line ends, so the program's own text is
never cut. The status is cut to the terminal's width (a wrapped line could not be erased).
"""

from __future__ import annotations

import shutil
import threading
from typing import IO

ERASE = b"\r\x1b[K"


class Screen:
    """The terminal behind ``stderr``: the program's output, event lines and a status line."""

    def __init__(self, stderr: IO[bytes]) -> None:
        self.stderr = stderr
        self.lock = threading.Lock()
        self.status = ""
        self.shown = False
        self.open_line = False
        """The last bytes written to the terminal did not end a line."""
        self.terminals: dict[int, bool] = {}
        """Per sink (by id), whether it is the terminal: asked once, not per chunk."""

    def _erase(self) -> None:
        if self.shown:
            self.stderr.write(ERASE)
            self.shown = False

    def _draw(self) -> None:
        if self.open_line or not self.status:
            return
        width = max(20, shutil.get_terminal_size().columns - 1)
        text = self.status if len(self.status) <= width else self.status[: width - 1] + "…"
        self.stderr.write(text.encode("utf-8", "replace"))
        self.stderr.flush()
        self.shown = True

    def write(self, sink: IO[bytes], data: bytes) -> None:
        """A chunk of the program's output for ``sink`` (stdout or stderr)."""
        if not data:
            return
        with self.lock:
            terminal = self.terminals.get(id(sink))
            if terminal is None:
                terminal = self.terminals[id(sink)] = _is_terminal(sink)
            if terminal:
                self._erase()
                self.stderr.flush()
            try:
                sink.write(data)
                sink.flush()
            except (BrokenPipeError, ValueError):
                return
            if terminal:
                self.open_line = not data.endswith(b"\n")
                self._draw()

    def line(self, text: str, status: str | None = None) -> None:
        """One line of pt2doctor's own (an event), above the status line (``status`` when
        given); after an open line of the program's, on a line of its own."""
        with self.lock:
            if status is not None:
                self.status = status
            self._erase()
            lead = b"\n" if self.open_line else b""
            self.stderr.write(lead + text.encode("utf-8", "replace") + b"\n")
            self.open_line = False
            self._draw()

    def show(self, status: str) -> None:
        with self.lock:
            if status == self.status and self.shown:
                return
            self.status = status
            self._erase()
            self._draw()

    def close(self) -> None:
        """The status line erased for good (the report comes next)."""
        with self.lock:
            self._erase()
            self.status = ""
            self.stderr.flush()


def _is_terminal(stream: IO[bytes]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
