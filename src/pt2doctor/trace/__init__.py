"""TORCH_TRACE logs: discovery, the streaming reader, typed records and parse stats."""

from pt2doctor.trace.discover import find_trace_logs
from pt2doctor.trace.reader import rank_from_filename, read_records
from pt2doctor.trace.records import CompileId, ParseStats, TraceRecord

__all__ = [
    "CompileId",
    "ParseStats",
    "TraceRecord",
    "find_trace_logs",
    "rank_from_filename",
    "read_records",
]
