"""Typed records of a TORCH_TRACE log, and the parse-health counters the reader keeps.

A TORCH_TRACE line is a glog prefix, a JSON *envelope* naming one record kind (``dynamo_start``,
``compilation_metrics``, ``artifact`` ...) with an optional compile id and rank, and, when the
envelope says ``has_payload``, tab-indented payload lines whose md5 the envelope carries.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any, NamedTuple

# Envelope keys that are not a record kind: the compile id, the rank, the payload checksum.
ENVELOPE_META_KEYS = frozenset(
    {
        "rank",
        "frame_id",
        "frame_compile_id",
        "attempt",
        "compiled_autograd_id",
        "has_payload",
        "stack",
    }
)

# Record kinds torch 2.x writes (tlparse's Envelope plus kinds newer torch added). A kind outside
# this set is still yielded, and counted in ParseStats.unknown_kinds so novelty is visible.
KNOWN_KINDS = frozenset(
    {
        "str",
        "dynamo_start",
        "dynamo_output_graph",
        "dynamo_guards",
        "dynamo_cpp_guards_str",
        "optimize_ddp_split_graph",
        "optimize_ddp_split_child",
        "compiled_autograd_graph",
        "aot_forward_graph",
        "aot_backward_graph",
        "aot_inference_graph",
        "aot_joint_graph",
        "inductor_pre_grad_graph",
        "inductor_post_grad_graph",
        "inductor_output_code",
        "compilation_metrics",
        "compilation_metrics_runtime",
        "bwd_compilation_metrics",
        "aot_autograd_backward_compilation_metrics",
        "graph_dump",
        "link",
        "symbolic_shape_specialization",
        "propagate_real_tensors_provenance",
        "guard_added",
        "guard_added_fast",
        "create_symbol",
        "create_unbacked_symbol",
        "expression_created",
        "missing_fake_kernel",
        "mismatched_fake_kernel",
        "artifact",
        "describe_storage",
        "describe_tensor",
        "describe_source",
        "dump_file",
        "chromium_event",
        "exported_program",
    }
)


# The counters of ParseStats, in report order.
COUNTS = (
    "files",
    "bytes",
    "lines",
    "records",
    "payloads",
    "blank_lines",
    "non_trace_lines",
    "bad_envelopes",
    "md5_mismatches",
    "truncated_records",
    "other_rank",
)

_COMPILE_ID = re.compile(r"(?:!(\d+)/)?(\d+)/(\d+)(?:_(\d+))?", re.ASCII)


class CompileId(NamedTuple):
    """Dynamo's compile id: which frame, which of its compiles, which restart attempt.

    ``str()`` gives Dynamo's own spelling (``0/1``, ``0/1_2`` for attempt 2, ``!3/0/1`` inside
    compiled autograd 3); :attr:`compile` drops the attempt, since restarts belong to one compile.
    A NamedTuple (immutable, hashable, ordered field by field) rather than a frozen dataclass:
    it is created at import in a tenth of the time, and ``report`` starts on every log.
    """

    frame_id: int | None
    frame_compile_id: int | None
    attempt: int = 0
    compiled_autograd_id: int | None = None

    @property
    def compile(self) -> CompileId:
        if self.attempt == 0:
            return self
        return CompileId(self.frame_id, self.frame_compile_id, 0, self.compiled_autograd_id)

    def __str__(self) -> str:
        frame = "-" if self.frame_id is None else str(self.frame_id)
        fcid = "-" if self.frame_compile_id is None else str(self.frame_compile_id)
        text = f"{frame}/{fcid}"
        if self.attempt:
            text += f"_{self.attempt}"
        if self.compiled_autograd_id is not None:
            text = f"!{self.compiled_autograd_id}/{text}"
        return text

    @staticmethod
    def parse(text: str) -> CompileId | None:
        """Parse ``0/1``, ``0/1_2``, ``[0/1]`` or ``!3/0/1``; None when it is not a compile id."""
        return _parse_compile_id(text)


@lru_cache(maxsize=4096)  # a log names few compile ids, in thousands of chromium events each
def _parse_compile_id(text: str) -> CompileId | None:
    match = _COMPILE_ID.fullmatch(text.strip().strip("[]"))
    if match is None:
        return None
    ca_id, frame, fcid, attempt = match.groups()
    return CompileId(
        int(frame), int(fcid), int(attempt or 0), None if ca_id is None else int(ca_id)
    )


class TraceRecord:
    """One envelope of a trace log, with its payload when the consumer asked for it.

    A plain class with slots, not a dataclass: one is made per record (46 000 for a 200 MB log)
    and the class itself is made at every start."""

    __slots__ = (
        "compile_id",
        "envelope_rank",
        "has_payload",
        "kind",
        "lineno",
        "meta",
        "payload_bytes",
        "rank",
        "stream",
        "timestamp",
    )

    kind: str
    """The record kind; for ``artifact`` and ``graph_dump`` records, also see :attr:`name`."""
    meta: Any
    """The value under the kind key (usually a dict of metadata)."""
    compile_id: CompileId | None
    rank: int | None
    stream: str
    """Which log the record came from: ``rank N`` or the file name."""
    lineno: int
    timestamp: str
    """The glog timestamp, ``MMDD HH:MM:SS.ffffff`` (glog records no year)."""
    payload_bytes: bytes | None
    """The assembled payload, when the consumer asked for this kind (decode with .payload)."""
    has_payload: bool
    envelope_rank: int | None
    """The rank the envelope itself gives (``rank`` falls back to the file name's)."""

    def __init__(
        self,
        kind: str,
        meta: Any,
        compile_id: CompileId | None,
        rank: int | None,
        stream: str,
        lineno: int,
        timestamp: str,
        payload_bytes: bytes | None = None,
        has_payload: bool = False,
        envelope_rank: int | None = None,
    ) -> None:
        self.kind = kind
        self.meta = meta
        self.compile_id = compile_id
        self.rank = rank
        self.stream = stream
        self.lineno = lineno
        self.timestamp = timestamp
        self.payload_bytes = payload_bytes
        self.has_payload = has_payload
        self.envelope_rank = envelope_rank

    def __repr__(self) -> str:
        return f"TraceRecord({self.kind!r}, {self.stream!r}, line {self.lineno})"

    @property
    def payload(self) -> str | None:
        """The payload as text (decoded on access: most consumers only look at a few)."""
        if self.payload_bytes is None:
            return None
        return self.payload_bytes.decode("utf-8", "replace")

    @property
    def name(self) -> str:
        """The artifact name for ``artifact``/``graph_dump`` records, else the kind."""
        if isinstance(self.meta, dict):
            name = self.meta.get("name")
            if isinstance(name, str):
                return name
        return self.kind


class ParseStats:
    """Parse health of one read: what was understood, what was new, what was broken.

    A plain class (not a dataclass, which took ~1 ms to make at every start): counters that
    start at zero, and two tallies of what was new."""

    __slots__ = (*COUNTS, "unknown_fields", "unknown_kinds")

    files: int
    bytes: int
    lines: int
    records: int
    payloads: int
    blank_lines: int
    non_trace_lines: int
    """Lines without a glog prefix (or stray payload lines with no envelope before them)."""
    bad_envelopes: int
    """A glog line whose JSON envelope did not decode, or decoded to something not an object."""
    md5_mismatches: int
    truncated_records: int
    """The last record of a file cut short (no final newline and unreadable or bad md5)."""
    other_rank: int
    """Records whose envelope rank differs from the rank the file's name gives."""
    unknown_kinds: Counter[str]
    unknown_fields: Counter[str]

    def __init__(self, **counts: int) -> None:
        """``ParseStats(lines=3, md5_mismatches=1)``: any counter may be given a start."""
        unknown = counts.keys() - set(COUNTS)
        if unknown:
            raise TypeError(f"ParseStats has no counter {sorted(unknown)[0]!r}")
        for name in COUNTS:
            setattr(self, name, counts.get(name, 0))
        self.unknown_kinds = Counter()
        self.unknown_fields = Counter()

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}={getattr(self, name)}" for name in COUNTS)
        return f"ParseStats({counts})"

    @property
    def problems(self) -> int:
        """Corruption found (novelty, i.e. unknown kinds and fields, is not a problem)."""
        return (
            self.non_trace_lines + self.bad_envelopes + self.md5_mismatches + self.truncated_records
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "lines": self.lines,
            "records": self.records,
            "payloads": self.payloads,
            "blank_lines": self.blank_lines,
            "non_trace_lines": self.non_trace_lines,
            "bad_envelopes": self.bad_envelopes,
            "md5_mismatches": self.md5_mismatches,
            "truncated_records": self.truncated_records,
            "other_rank": self.other_rank,
            "problems": self.problems,
            "unknown_kinds": dict(sorted(self.unknown_kinds.items())),
            "unknown_fields": dict(sorted(self.unknown_fields.items())),
        }
