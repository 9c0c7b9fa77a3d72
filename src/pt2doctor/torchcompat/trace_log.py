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


# Inductor's "fusion" artifact (TORCH_LOGS=fusion): the scheduler logs each fusion it makes and
# each pair it refuses (WhyNoFuse), the Triton/SIMD backend its numel checks. The C++ backend
# has no fusion logger: it refuses loop-level fusions without a word.
FUSION_LOGGERS = (
    "torch._inductor.scheduler.__fusion",
    "torch._inductor.codegen.simd.__fusion",
    "torch._inductor.codegen.triton.__fusion",
)


def attach_fusion_log(stream: Any, keep: Callable[[str | None, str], bool]) -> Callable[[], None]:
    """Write Inductor's fusion log to ``stream`` in TORCH_LOGS format (``[0/0] [__fusion] ...``
    lines), in process and without TORCH_LOGS, each record only if ``keep(compile_id,
    message)``. A program that turned the artifact on itself still sees it; otherwise the
    records reach no other handler. Returns ``detach``."""
    import logging

    from pt2doctor.torchcompat.dynamo import current_compile_id

    try:
        from torch._logging._internal import TorchLogsFormatter

        formatter: logging.Formatter = TorchLogsFormatter()
    except ImportError:  # older torch: the same prefix, by hand
        formatter = logging.Formatter("[__fusion] %(message)s")

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                if keep(current_compile_id(), record.getMessage()):
                    stream.write(self.format(record) + "\n")
            except Exception:  # the log must never break a compile
                pass

    handler = Handler(logging.DEBUG)
    handler.setFormatter(formatter)
    previous = []
    for name in FUSION_LOGGERS:
        log = logging.getLogger(name)
        previous.append((log, log.level, log.propagate))
        if not log.isEnabledFor(logging.DEBUG):  # the program did not ask for it itself
            log.setLevel(logging.DEBUG)
            log.propagate = False
        log.addHandler(handler)

    def detach() -> None:
        for log, level, propagate in previous:
            log.removeHandler(handler)
            log.setLevel(level)
            log.propagate = propagate
        stream.flush()

    return detach
