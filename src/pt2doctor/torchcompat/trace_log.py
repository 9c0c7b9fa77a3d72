"""The structured trace (``torch._logging._internal.trace_log``) written to a file in
process, with no TORCH_TRACE set."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def attach_trace_file(stream: Any) -> Callable[[], None] | None:
    """Write every structured trace record to ``stream`` in TORCH_TRACE format, in process
    (no TORCH_TRACE needed). Strings torch interned before now are written first so file
    names resolve. Returns ``detach``; None when unavailable on this torch."""
    import logging

    try:
        from torch._logging import structured
        from torch._logging._internal import TorchLogsFormatter, trace_log
    except ImportError:
        return None
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TorchLogsFormatter(trace=True))
    for text, index in list(getattr(structured, "INTERN_TABLE", {}).items()):
        record = logging.LogRecord(trace_log.name, logging.DEBUG, "pt2doctor", 0, "", None, None)
        record.metadata = {"str": [text, index]}
        record.payload = None
        stream.write(handler.format(record) + "\n")
    previous_level, previous_propagate = trace_log.level, trace_log.propagate
    trace_log.setLevel(logging.DEBUG)
    trace_log.propagate = False  # trace records are for our file, not the program's log handlers
    trace_log.addHandler(handler)

    def detach() -> None:
        trace_log.removeHandler(handler)
        if not trace_log.handlers:
            trace_log.setLevel(previous_level)
            trace_log.propagate = previous_propagate
        handler.flush()

    return detach
