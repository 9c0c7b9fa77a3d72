"""Turn a stream of trace records into the typed :class:`~pt2doctor.trace.types.Run`.

One handler per record kind, registered in ``HANDLERS``; each folds its record into the compile
it belongs to and drops the payload. Only what the analyses need is kept, so memory grows with
the number of compiles, not with the size of the log.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from pt2doctor.trace.built import (
    parse_kernel_frames,
    parse_kernel_nodes,
    parse_output_code,
    parse_output_graph,
    parse_post_to_pre,
)
from pt2doctor.trace.cache_records import (
    CACHE_ARTIFACTS,
    TRITON_KERNEL_INFO,
    ComponentTable,
    decode_autotune_event,
    decode_cache_event,
)
from pt2doctor.trace.guard_tree import (
    first_arg_type,
    hf_cache_class,
    parse_cpp_guards,
    self_type,
)
from pt2doctor.trace.messages import innermost_user_frame, is_user_file, parse_graph_break
from pt2doctor.trace.reader import rank_from_filename, read_records, stream_names
from pt2doctor.trace.records import CompileId, ParseStats, TraceRecord
from pt2doctor.trace.types import (
    Built,
    CompileRecord,
    ExportTrace,
    InductorGraph,
    Run,
    ShapeEvent,
    SourceLine,
    StreamInfo,
)

# Chromium events timing a compile's nested stages (used where compilation_metrics lacks them;
# compile_file, the C++ build, exists only here).
_PHASE_EVENTS = {
    "entire_frame_compile": "total",
    "backend_compile": "backend",
    "inductor_compile": "inductor",
    "code_gen": "codegen",
    "compile_file": "cpp_build",
    "AOTAutogradCache.inductor_load": "cache_load",
    "build_guards": "guard_build",
}
_PHASE_EVENTS_BYTES = frozenset(name.encode() for name in _PHASE_EVENTS)
# compilation_metrics fields for the same timers.
_METRIC_TIMERS = {
    "entire_frame_compile_time_s": "total",
    "backend_compile_time_s": "backend",
    "inductor_compile_time_s": "inductor",
    "code_gen_time_s": "codegen",
}
_EVENT_NAME = re.compile(rb'"name":\s*"([^"]*)"')
_CACHE_ARTIFACTS = {
    f"{cache}_cache_{outcome}": (name, outcome)
    for cache, name in (("fx_graph", "fx_graph"), ("aotautograd", "aotautograd"))
    for outcome in ("hit", "miss", "bypass")
}
# Inductor's provenance artifacts (INDUCTOR_PROVENANCE=1): kernel -> post-grad nodes (and the
# older logs' name for it), kernel -> the user's stack traces.
_NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
_OLD_NODE_MAPPINGS = "inductor_triton_kernel_to_post_grad_nodes"
_KERNEL_FRAMES = "inductor_provenance_tracking_kernel_stack_traces"
_PROVENANCE = frozenset({_NODE_MAPPINGS, _OLD_NODE_MAPPINGS, _KERNEL_FRAMES})
_AOT_WRAPPER = "inductor_aot_wrapper_code"  # a graph_dump record
_PAYLOAD_ARTIFACTS = frozenset(
    {"recompile_reasons", "dynamo_graph_break_reason", "dynamo_error", "torch_version",
     TRITON_KERNEL_INFO, *CACHE_ARTIFACTS, *_PROVENANCE}
)  # fmt: skip
# compilation_metrics counters kept raw (besides every ``*_us`` timer).
_COUNTERS = frozenset(
    {"guard_count", "cache_size", "accumulated_cache_size", "shape_env_guard_count"}
)
_PAYLOAD_KINDS = frozenset(
    {"dynamo_cpp_guards_str", "chromium_event", "dynamo_output_graph", "inductor_output_code",
     "exported_program"}
)  # fmt: skip
# Shape-environment events an export log explains (tlparse --export shows them), kept apart
# from compiles: at most this many.
_SHAPE_KINDS = {
    "guard_added": "guard_added",
    "propagate_real_tensors_provenance": "data_dependent",
    "create_unbacked_symbol": "unbacked_symbol",
    "missing_fake_kernel": "missing_fake_kernel",
    "mismatched_fake_kernel": "mismatched_fake_kernel",
}
_MAX_SHAPE_EVENTS = 500
_LIBRARY = re.compile(r"/torch/|site-packages/|dist-packages/|/lib/python\d[\d.]*/|^<")
# Where torch.compile's own wrapper of a module (compile_wrapper) lives.
_EVAL_FRAME = "/torch/_dynamo/eval_frame.py"
# Frames between nn.Module.__call__ and the compiled one that are no caller: torch.compile's
# wrapper, and pt2doctor's own interception of compiled calls (torchcompat/dynamo.py): run
# --profile's pairing of compiled and eager calls, run --try-fixes' digest of what they return.
_PASS_THROUGH = (_EVAL_FRAME, "/pt2doctor/torchcompat/dynamo.py",
                 "/pt2doctor/torchcompat/paired.py", "/pt2doctor/torchcompat/digests.py")  # fmt: skip


def wants_payload(kind: str, meta: Any) -> bool:
    """The payloads the collector reads; every other payload is md5-checked and dropped."""
    if kind in _PAYLOAD_KINDS:
        return True
    if not isinstance(meta, dict):
        return False
    name = _text(meta.get("name"))
    return (kind == "artifact" and name in _PAYLOAD_ARTIFACTS) or (
        kind == "graph_dump" and name == _AOT_WRAPPER
    )


def peek_payload(kind: str, head: bytes) -> bool:
    """A chromium event is kept only when its name says it times a compile stage: most do not,
    and the ones skipped here are never assembled (about half a log's payload bytes)."""
    if kind != "chromium_event":
        return True
    name = _EVENT_NAME.search(head)
    return name is not None and name.group(1) in _PHASE_EVENTS_BYTES


class _Collector:
    """Folds records into per-compile state."""

    def __init__(self) -> None:
        self.compiles: dict[tuple[str, CompileId], CompileRecord] = {}
        self.compile_ids: set[tuple[str, CompileId]] = set()
        self.streams: dict[str, None] = {}
        self.envelope_ranks: dict[str, dict[int, int]] = {}
        self.environment: dict[str, Any] = {}
        self.open_events: dict[tuple[str, CompileId, str], float] = {}
        self.event_timings: dict[tuple[str, CompileId], dict[str, float]] = {}
        self.components = ComponentTable()
        self.aot_built: Built | None = None
        self.shape_events: list[ShapeEvent] = []
        self.exported_program: str | None = None
        self.exported = False

    def compile_for(self, record: TraceRecord) -> CompileRecord | None:
        cid = record.compile_id
        if cid is None or cid.frame_id is None or cid.frame_compile_id is None:
            return None
        key = (record.stream, cid.compile)
        entry = self.compiles.get(key)
        if entry is None:
            entry = CompileRecord(compile_id=cid.compile, stream=record.stream, rank=record.rank)
            self.compiles[key] = entry
        if cid.attempt + 1 > entry.attempts:
            if entry.symbols or entry.specializations:
                # Dynamo restarted the analysis (a graph break found, a speculation failed):
                # the shape env starts again, and what the dropped attempt made dynamic or
                # specialized is not what the compile it made guards on.
                entry.symbols = {}
                entry.specializations = []
                entry.specialization_stacks = {}
            entry.attempts = cid.attempt + 1
        return entry

    def run(self, sources: list[str], stats: ParseStats) -> Run:
        for key, timings in self.event_timings.items():
            entry = self.compiles.get(key)
            if entry is not None:
                for name, seconds in timings.items():
                    entry.timings.setdefault(name, seconds)
        return Run(
            compiles=list(self.compiles.values()),
            parse_stats=stats,
            sources=sources,
            streams=list(self.streams),
            environment=self.environment,
            compile_id_count=len(self.compile_ids),
            cache_component_values=self.components.values,
            aot_built=self.aot_built,
            export=ExportTrace(self.shape_events, self.exported_program) if self.exported else None,
        )


Handler = Callable[[_Collector, TraceRecord], None]


def _text(value: Any) -> str | None:
    """A string field, or None when the log holds something else there."""
    return value if isinstance(value, str) else None


def _integer(value: Any) -> int | None:
    """An int field (not a bool), or None when the log holds something else there."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _caller(stack: list[Any]) -> dict[str, Any] | None:
    """The frame that called the compiled one, past the wrapper ``torch.compile(module)`` puts
    between ``nn.Module.__call__`` and ``forward`` (``compile_wrapper`` in eval_frame.py) and
    pt2doctor's pairing (``run --profile``)."""
    for frame in reversed(stack[:-1]):
        if not isinstance(frame, dict):
            return None
        if not str(frame.get("filename") or "").endswith(_PASS_THROUGH):
            return frame
    return None


def _call_site(stack: list[Any]) -> SourceLine | None:
    """The user's line that called the compiled frame: the first frame below it that is not
    torch's (``nn.Module.__call__``, the compile wrapper), when it is the user's own code;
    None when a library called it (``model.generate(...)`` builds the tensors it passes)."""
    for frame in reversed(stack[:-1]):
        filename = frame.get("filename") if isinstance(frame, dict) else None
        if not isinstance(filename, str) or not filename:
            return None
        if "/torch/" in filename.replace("\\", "/") or filename.endswith(_PASS_THROUGH):
            continue
        return _frame_line(frame) if is_user_file(filename) else None
    return None


def _on_dynamo_start(col: _Collector, record: TraceRecord) -> None:
    entry = col.compile_for(record)
    stack = record.meta.get("stack") if isinstance(record.meta, dict) else None
    if entry is None or not isinstance(stack, list) or not stack:
        return
    last = stack[-1]
    if isinstance(last, dict) and entry.function is None:
        entry.function = _text(last.get("name"))
        entry.file = _text(last.get("filename"))
        entry.line = _integer(last.get("line"))
        caller = _caller(stack)
        if caller is not None:
            entry.caller = _frame_line(caller)
        entry.call_site = _call_site(stack)


def _on_output_graph(col: _Collector, record: TraceRecord) -> None:
    entry = col.compile_for(record)
    if entry is not None:
        entry.graph_count += 1
        if record.payload is not None and _built(entry).graph is None:
            _built(entry).graph = parse_output_graph(record.payload)


def _built(entry: CompileRecord) -> Built:
    if entry.built is None:
        entry.built = Built()
    return entry.built


def _on_output_code(col: _Collector, record: TraceRecord) -> None:
    entry = col.compile_for(record)
    if entry is not None and record.payload is not None:
        _add_code(_built(entry), record.payload)


def _add_code(built: Built, payload: str) -> None:
    """A graph's output code; it joins the provenance logged just before it when that graph
    has no code yet (old AOTInductor logs write the provenance first)."""
    code = parse_output_code(payload)
    graphs = built.inductor_graphs
    if graphs and graphs[-1].code is None:
        graphs[-1].code = code
    else:
        graphs.append(InductorGraph(code))


def _on_provenance(built: Built, name: str, payload: str) -> None:
    """A provenance artifact of the graph whose output code came last (a second artifact of
    the same name is the next graph's)."""
    graphs = built.inductor_graphs
    if not graphs or name in graphs[-1].artifacts:
        graphs.append(InductorGraph())
    graph = graphs[-1]
    graph.artifacts.add(name)
    if name == _KERNEL_FRAMES:
        graph.kernel_frames = parse_kernel_frames(payload)
    elif name == _NODE_MAPPINGS or not graph.kernel_nodes:  # the newer artifact wins
        graph.kernel_nodes = parse_kernel_nodes(payload)
        graph.post_to_pre = parse_post_to_pre(payload) or graph.post_to_pre


def _on_aot_artifact(col: _Collector, name: str | None, payload: str | None) -> None:
    """AOTInductor's wrapper code and provenance, which carry no compile id."""
    if payload is None or not (name in _PROVENANCE or name == _AOT_WRAPPER):
        return
    if col.aot_built is None:
        col.aot_built = Built()
    if name == _AOT_WRAPPER:
        _add_code(col.aot_built, payload)
    else:
        _on_provenance(col.aot_built, name or "", payload)


def _on_graph_dump(col: _Collector, record: TraceRecord) -> None:
    if record.compile_id is None:
        _on_aot_artifact(col, record.name, record.payload)
    else:
        col.compile_for(record)


def _on_cpp_guards(col: _Collector, record: TraceRecord) -> None:
    entry = col.compile_for(record)
    if entry is not None and record.payload is not None:
        entry.guards = parse_cpp_guards(record.payload)
        entry.self_type = self_type(record.payload)
        entry.first_arg_type = first_arg_type(record.payload)
        entry.hf_cache_class = hf_cache_class(record.payload)


def _number(metrics: dict[str, Any], key: str) -> float | None:
    value = metrics.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _metric_timings(metrics: dict[str, Any]) -> dict[str, float]:
    """The nested stage timers compilation_metrics gives, in seconds."""
    timings = {
        name: value
        for key, name in _METRIC_TIMERS.items()
        if (value := _number(metrics, key)) is not None
    }
    triton = _number(metrics, "triton_compile_time_us")
    if triton:
        timings["triton_build"] = triton / 1e6
    return timings


def _counters(metrics: dict[str, Any]) -> dict[str, float]:
    """The per-phase ``*_us`` timers and the guard and cache counters, raw."""
    return {
        key: float(value)
        for key, value in metrics.items()
        if (key.endswith("_us") or key in _COUNTERS)
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
    }


def _on_compilation_metrics(col: _Collector, record: TraceRecord) -> None:
    metrics = record.meta
    if not isinstance(metrics, dict):
        return
    if record.compile_id is None and isinstance(metrics.get("compile_id"), str):
        record.compile_id = CompileId.parse(metrics["compile_id"])
    entry = col.compile_for(record)
    if entry is None:
        return
    entry.has_metrics = True
    entry.function = _text(metrics.get("co_name")) or entry.function
    entry.file = _text(metrics.get("co_filename")) or entry.file
    entry.line = _integer(metrics.get("co_firstlineno")) or entry.line
    entry.start_time = _number(metrics, "start_time")
    entry.compile_time_s = _number(metrics, "entire_frame_compile_time_s")
    entry.timings.update(_metric_timings(metrics))
    entry.graph_op_count = _integer(metrics.get("graph_op_count")) or entry.graph_op_count
    guarded = metrics.get("has_guarded_code")
    entry.has_guarded_code = guarded if isinstance(guarded, bool) else None
    entry.fail_type = _text(metrics.get("fail_type"))
    entry.fail_reason = _text(metrics.get("fail_reason"))
    entry.cudagraph_skip_reason = _text(metrics.get("cudagraph_skip_reason"))
    if _text(metrics.get("fail_user_frame_filename")):
        entry.fail_user_frame = SourceLine(
            metrics["fail_user_frame_filename"],
            _integer(metrics.get("fail_user_frame_lineno")),
            None,
        )
    entry.counters.update(_counters(metrics))
    restarts = metrics.get("restart_reasons")
    if isinstance(restarts, list):
        entry.restart_reasons = [str(reason) for reason in restarts]
    for key, env_key in (
        ("pytorch_version", "torch_version"),
        ("python_version", "python_version"),
        ("triton_version", "triton_version"),
        ("cuda_version", "cuda_version"),
    ):
        if _text(metrics.get(key)):
            col.environment.setdefault(env_key, metrics[key])


def _recompile_reasons(payload: str) -> list[str]:
    text = payload.strip()
    if text.startswith("["):
        try:
            decoded = orjson.loads(text)
        except orjson.JSONDecodeError:
            return [text]
        if isinstance(decoded, list):
            return [str(item) for item in decoded]
    return [text] if text else []


def _on_artifact(col: _Collector, record: TraceRecord) -> None:
    name = record.name
    if name == "torch_version" and record.payload:
        try:
            version = orjson.loads(record.payload)
        except orjson.JSONDecodeError:
            version = None
        if isinstance(version, dict) and isinstance(version.get("pytorch_version"), str):
            col.environment.setdefault("torch_version", version["pytorch_version"])
            if isinstance(version.get("commit"), str):
                col.environment.setdefault("torch_commit", version["commit"])
        return
    entry = col.compile_for(record)
    if entry is None:
        if record.compile_id is None:
            _on_aot_artifact(col, name, record.payload)
        return
    if name in _CACHE_ARTIFACTS or name == TRITON_KERNEL_INFO:
        _on_cache_artifact(col, entry, name or "", record.payload)
    if name in _CACHE_ARTIFACTS:
        cache, outcome = _CACHE_ARTIFACTS[name]
        # One compile can hold several graphs (forward, backward): keep the worst outcome.
        order = {"hit": 0, "bypass": 1, "miss": 2}
        previous = entry.cache.get(cache)
        if previous is None or order[outcome] > order[previous]:
            entry.cache[cache] = outcome
    elif record.payload is None:
        return
    elif name == "recompile_reasons":
        entry.recompile_reasons = _recompile_reasons(record.payload)
    elif name == "dynamo_graph_break_reason":
        entry.graph_breaks.append(parse_graph_break(record.payload, str(entry.compile_id)))
    elif name in _PROVENANCE:
        _on_provenance(_built(entry), name, record.payload)
    elif name == "dynamo_error":
        lines = [line for line in record.payload.strip().splitlines() if line.strip()]
        entry.dynamo_error = lines[-1] if lines else None
        entry.raised_in = innermost_user_frame(lines)


def _on_cache_artifact(
    col: _Collector, entry: CompileRecord, name: str, payload: str | None
) -> None:
    if name == TRITON_KERNEL_INFO:
        event = decode_autotune_event(payload)
        if event is not None and entry.cache.get(event.cache) != "miss":
            entry.cache[event.cache] = event.status
    else:
        event = decode_cache_event(name, payload, col.components)
    if event is not None:
        entry.cache_events.append(event)


def _on_symbol(col: _Collector, record: TraceRecord) -> None:
    entry = col.compile_for(record)
    meta = record.meta
    if entry is None or not isinstance(meta, dict):
        return
    symbol, source = meta.get("symbol"), meta.get("source")
    if isinstance(symbol, str) and isinstance(source, str):
        entry.symbols[symbol] = (source, str(meta.get("val")))


def _on_specialization(col: _Collector, record: TraceRecord) -> None:
    entry = col.compile_for(record)
    meta = record.meta
    if entry is None or not isinstance(meta, dict):
        return
    text = f"{meta.get('symbol') or meta.get('sources')} = {meta.get('value')}"
    if meta.get("reason"):
        text += f" ({meta['reason']})"
    if len(entry.specializations) < 50:
        entry.specializations.append(text)
    stack = _user_stack(meta.get("user_stack"))
    sources = meta.get("sources")
    if stack and isinstance(sources, list):
        for source in sources[:8]:
            if isinstance(source, str):
                entry.specialization_stacks.setdefault(source, stack)


def _user_stack(frames: Any) -> list[SourceLine]:
    """A logged user stack (``[{filename, line, name, loc}]``) as SourceLines, the innermost
    10 frames."""
    if not isinstance(frames, list):
        return []
    return [_frame_line(f) for f in frames[-10:] if isinstance(f, dict)]


def _frame_line(frame: dict[str, Any]) -> SourceLine:
    """One logged stack frame (``{filename, line, name, loc}``) as a SourceLine."""
    return SourceLine(
        _text(frame.get("filename")),
        _integer(frame.get("line")),
        _text(frame.get("name")),
        _text(frame.get("loc")),
    )


def _on_chromium_event(col: _Collector, record: TraceRecord) -> None:
    raw = record.payload_bytes
    if raw is None:
        return
    # Most events are not phases: look at the name before decoding the JSON (~10x fewer loads).
    name = _EVENT_NAME.search(raw, 0, 400)
    if name is None or name.group(1) not in _PHASE_EVENTS_BYTES:
        return
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return
    if not isinstance(event, dict):
        return
    phase = _PHASE_EVENTS.get(event.get("name", ""))
    args = event.get("args")
    cid_text = args.get("compile_id") if isinstance(args, dict) else None
    ts = event.get("ts")
    if phase is None or not isinstance(cid_text, str) or not isinstance(ts, (int, float)):
        return
    cid = CompileId.parse(cid_text)
    if cid is None:
        return
    key = (record.stream, cid.compile, phase)
    if event.get("ph") == "B":
        col.open_events[key] = float(ts)
    elif event.get("ph") == "E" and key in col.open_events:
        seconds = (float(ts) - col.open_events.pop(key)) / 1e6
        timings = col.event_timings.setdefault((record.stream, cid.compile), {})
        timings[phase] = timings.get(phase, 0.0) + seconds


def _on_shape_event(col: _Collector, record: TraceRecord) -> None:
    col.compile_for(record)
    meta = record.meta
    if not isinstance(meta, dict) or len(col.shape_events) >= _MAX_SHAPE_EVENTS:
        return
    kind = _SHAPE_KINDS[record.kind]
    expr = _text(meta.get("expr")) or _text(meta.get("symbol")) or _text(meta.get("op")) or ""
    stack = _user_stack(meta.get("user_stack"))
    if not stack:  # only the whole stack: its innermost frame outside torch and libraries
        stack = [f for f in _user_stack(meta.get("stack")) if not _LIBRARY.search(f.file or "")]
    sources = meta.get("symbol_to_sources")
    col.shape_events.append(
        ShapeEvent(
            kind,
            expr,
            stack[-1] if stack else None,
            _text(meta.get("result")),
            {str(k): str(v) for k, v in sources.items()} if isinstance(sources, dict) else {},
        )
    )


def _on_exported_program(col: _Collector, record: TraceRecord) -> None:
    col.exported = True
    if record.payload_bytes is not None and col.exported_program is None:
        col.exported_program = record.payload_bytes.decode("utf-8", "replace")


def _on_any(col: _Collector, record: TraceRecord) -> None:
    col.compile_for(record)


HANDLERS: dict[str, Handler] = {
    "dynamo_start": _on_dynamo_start,
    "dynamo_output_graph": _on_output_graph,
    "inductor_output_code": _on_output_code,
    "dynamo_cpp_guards_str": _on_cpp_guards,
    "compilation_metrics": _on_compilation_metrics,
    "artifact": _on_artifact,
    "graph_dump": _on_graph_dump,
    "create_symbol": _on_symbol,
    "create_unbacked_symbol": _on_symbol,
    "symbolic_shape_specialization": _on_specialization,
    "chromium_event": _on_chromium_event,
    "exported_program": _on_exported_program,
    **dict.fromkeys(_SHAPE_KINDS, _on_shape_event),
}


def _stream_info(paths: list[Path], envelope_ranks: dict[str, dict[int, int]]) -> list[StreamInfo]:
    return [
        StreamInfo(stream, str(path), rank_from_filename(path), envelope_ranks.get(stream, {}))
        for path, stream in zip(paths, stream_names(paths), strict=True)
    ]


def collect_run(paths: list[Path]) -> Run:
    """Read the logs at ``paths`` and build the typed Run (never raises on log content)."""
    stats = ParseStats()
    collector = _Collector()
    last: tuple[str, CompileId | None] = ("", None)
    for record in read_records(paths, stats, wants_payload, peek_payload):
        stream, cid = record.stream, record.compile_id
        if stream is not last[0] or cid is not last[1]:  # most records repeat the last pair
            last = (stream, cid)
            collector.streams.setdefault(stream, None)
            if cid is not None:
                collector.compile_ids.add((stream, cid))
        if record.envelope_rank is not None:
            ranks = collector.envelope_ranks.setdefault(stream, {})
            ranks[record.envelope_rank] = ranks.get(record.envelope_rank, 0) + 1
        HANDLERS.get(record.kind, _on_any)(collector, record)
    run = collector.run([str(path) for path in paths], stats)
    run.stream_info = _stream_info(paths, collector.envelope_ranks)
    return run
