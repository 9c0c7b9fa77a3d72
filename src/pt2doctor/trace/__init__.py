"""TORCH_TRACE logs: discovery, the streaming reader, typed records and parse stats.

The names below are imported on first use, so a module that needs only one part of the package
(the trace model in ``trace.types``, ``trace.patterns``) does not import the reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.trace.discover import find_trace_logs
    from pt2doctor.trace.reader import rank_from_filename, read_records
    from pt2doctor.trace.records import CompileId, ParseStats, TraceRecord

_HOMES = {
    "CompileId": "records",
    "ParseStats": "records",
    "TraceRecord": "records",
    "find_trace_logs": "discover",
    "rank_from_filename": "reader",
    "read_records": "reader",
}
__all__ = [
    "CompileId",
    "ParseStats",
    "TraceRecord",
    "find_trace_logs",
    "rank_from_filename",
    "read_records",
]
__getattr__ = lazy_names(__name__, _HOMES)
