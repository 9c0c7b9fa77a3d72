"""Inductor's fusion log, kept in the run directory under ``run --kernels``.

The scheduler logs every fusion round in full (each candidate node, with its stack traces,
again each round) and every pair it refuses. ``FusionLogKeeper`` keeps what the report uses,
bounded: the start of each scheduling (round 1), each node's first description in it, the
fusions made, and the refusals (at most MAX_REFUSALS per compile). The file stops growing at
MAX_BYTES. Standard library only, like the probes.
"""

from __future__ import annotations

import re
import threading
from typing import Any, TextIO

MAX_REFUSALS = 2000
"""Per compile: the refusals kept ("cannot fuse A with B: why")."""
MAX_BYTES = 16 * 1024 * 1024
FUSION_ENV = "PT2DOCTOR_FUSION"
_NODE_NAME = re.compile(r"^\s+(\w*)SchedulerNode\(name='([^']+)'")


class FusionLogKeeper:
    """The ``keep(compile_id, message)`` filter of ``torchcompat.attach_fusion_log``, and the
    bounded file it writes to (``write``)."""

    def __init__(self, stream: TextIO, max_bytes: int = MAX_BYTES) -> None:
        self.stream = stream
        self.max_bytes = max_bytes
        self.written = 0
        self.full = False
        self.lock = threading.Lock()
        self.refusals: dict[str | None, int] = {}
        self.seen: dict[str | None, set[str]] = {}

    def keep(self, compile_id: str | None, message: str) -> bool:
        if self.full:
            return False
        if message.startswith("===== attempting fusion (1/"):
            self.seen[compile_id] = set()  # a new scheduling: its nodes are described anew
            return True
        if message.startswith(("fusing ", "can fuse")):
            return True
        if message.startswith("cannot fuse"):
            count = self.refusals.get(compile_id, 0) + 1
            self.refusals[compile_id] = count
            return count <= MAX_REFUSALS
        node = _NODE_NAME.match(message)
        if node is None or "Fused" in node[1]:  # a fused node: its members were described
            return False
        seen = self.seen.setdefault(compile_id, set())
        if node[2] in seen:
            return False
        seen.add(node[2])
        return True

    def write(self, text: str) -> Any:
        with self.lock:
            if self.full:
                return
            if self.written + len(text) > self.max_bytes:
                self.full = True
                text = "[pt2doctor] fusion log truncated at its size limit\n"
            self.stream.write(text)
            self.written += len(text)

    def flush(self) -> None:
        with self.lock:
            self.stream.flush()
