"""Compile events explained as they happen (``pt2doctor report --follow``): one line per
notable event, in the user's words, from the records a growing log hands over
(trace/tail.py).

Notable: a recompile (what changed, from Dynamo's failed guard, ``(now dynamic)`` when the
new compile made it a symbol), a recompile after warmup (``warmup_s`` after the first
compile), a frame at the recompile limit (it now runs eagerly), a new graph-break site, a
compile slower than ``slow_s``, a compile that failed, and a compile-cache miss on a warm
start (after a hit of the same log). Each event knows its ``kind``, the name ``--fail-on``
matches.

Between records, :meth:`LiveState.tick` says what time alone reveals: a compile still running
after ``progress_s`` (its frame and phase, from the compile's own chromium events), and, with
several rank logs, one rank compiling longer than ``skew_s`` while every other rank has
finished its compiles and waits (``rank-skew``: the cause of collective timeouts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pt2doctor.analysis.recompiles.changes import fold_changes, to_change
from pt2doctor.analysis.recompiles.guards import parse_recompile_reason
from pt2doctor.analysis.recompiles.outlook import change_line
from pt2doctor.analysis.text import counted
from pt2doctor.trace.reader import rank_from_filename
from pt2doctor.trace.tail import LiveRecord

FAIL_ON = ("recompile", "recompile-after-warmup", "limit-hit", "new-break", "slow-compile",
           "compile-failure", "rank-skew", "cache-miss")  # fmt: skip
# A compile cache's lookup outcome, from the artifact torch logs for it: (cache, hit).
_CACHE_LOOKUPS = {
    "fx_graph_cache_hit": ("FX graph", True),
    "fx_graph_cache_miss": ("FX graph", False),
    "aotautograd_cache_hit": ("AOTAutograd", True),
    "aotautograd_cache_miss": ("AOTAutograd", False),
}
# The phase a compile is in, from the chromium events torch writes into the trace as each
# stage begins (and the records that end a stage).
_PHASE_OF_EVENT = {
    "entire_frame_compile": "Dynamo tracing",
    "backend_compile": "backend compile",
    "create_aot_dispatcher_function": "AOTAutograd",
    "inductor_compile": "Inductor",
    "GraphLowering.run": "Inductor lowering",
    "code_gen": "Inductor codegen",
    "async_compile.wait": "Inductor kernel builds",
}
_PHASE_AFTER_EVENT = {"backend_compile": "guards"}
_PHASE_OF_RECORD = {
    "dynamo_start": "Dynamo tracing",
    "dynamo_output_graph": "backend compile",
    "inductor_post_grad_graph": "Inductor lowering",
    "inductor_output_code": "Inductor kernel builds",
}
SKEW_FIX = ("warm the compile cache on every rank or on none, keep rank-specific shapes out of "
            "the compiled frame, and compile before the first collective")  # fmt: skip
_LIMIT = re.compile(r"cache_size_limit|recompile_limit|accumulated_cache_size_limit", re.I)
_BREAK_SITE = re.compile(r"^Graph break in user code at (\S+)$", re.M)
_BREAK_REASON = re.compile(r"^Graph Break Reason: (.+)$", re.M)
_CLOCK = re.compile(r"(\d+):(\d+):(\d+(?:\.\d+)?)")


@dataclass(slots=True)
class LiveEvent:
    kind: str
    """One of FAIL_ON, or ``compile`` (a first compile, shown, never failed on)."""
    at_s: float
    """Seconds since the log's first record (its glog clock)."""
    text: str
    frame: str | None = None
    """The frame as the line names it (``step (loop.py:12)``)."""
    stream: str = ""
    """The log it came from (its rank is in the file name)."""
    cause: str | None = None
    """For a recompile, the kind of what changed first (``size``, ``value``, ``flag``...)."""
    site: str | None = None
    """For a new break, its ``file:line``."""
    seconds: float | None = None
    """For a compile, how long it took."""

    def line(self) -> str:
        return f"{self.at_s:7.1f} s  {self.text}"


@dataclass(slots=True)
class Compiling:
    """A compile in progress on one log: its frame, since when, and its phase."""

    frame: str
    since: float
    phase: str = "Dynamo tracing"
    said: set[str] = field(default_factory=set)
    """The tick events already said for it (``compiling``, ``rank-skew``)."""


@dataclass
class LiveState:
    """What has been seen so far: frames by (log, frame id), break sites, symbols of the
    compile in progress, the clock's origin."""

    slow_s: float | None = None
    warmup_s: float = 60.0
    progress_s: float = 30.0
    """A compile still running after this long is said (``compiling``), once."""
    skew_s: float | None = None
    """With several rank logs: one rank compiling this long while the others wait is said."""
    frames: dict[tuple[str, str], str] = field(default_factory=dict)
    sites: set[str] = field(default_factory=set)
    symbols: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    """Per (log, compile id), symbol -> its source: what the compile made dynamic, less the
    symbols specialized again (as recompiles/changes.py ``dynamic_exprs`` reads the trace)."""
    origin: float | None = None
    first_compile: float | None = None
    compiles: int = 0
    recompiles: int = 0
    late: int = 0
    """Recompiles after warmup."""
    breaks: list[float] = field(default_factory=list)
    """When each graph break was logged (for the status line's rate)."""
    in_progress: dict[str, Compiling] = field(default_factory=dict)
    """Per log, the compile running."""
    idle_since: dict[str, float] = field(default_factory=dict)
    """Per log not compiling, since when (its last compile's end, or its first record)."""
    cache_hits: dict[str, int] = field(default_factory=dict)
    """Per log, the compile-cache hits so far: a miss after one is a miss on a warm start."""
    cache_missed: set[tuple[str, str]] = field(default_factory=set)
    """(log, compile id) of the misses already said (FX graph and AOTAutograd: once)."""

    def seconds(self, clock: str) -> float:
        match = _CLOCK.match(clock)
        if match is None:
            return 0.0
        value = int(match[1]) * 3600 + int(match[2]) * 60 + float(match[3])
        if self.origin is None:
            self.origin = value
        if value < self.origin:  # past midnight
            value += 86400
        return value - self.origin

    def now_s(self) -> float:
        """This machine's time of day on the log's clock (glog writes local time)."""
        import datetime

        if self.origin is None:
            return 0.0
        return self.seconds(datetime.datetime.now().strftime("%H:%M:%S.%f"))

    def start_clock(self) -> None:
        """Count seconds from now, not from the log's first record (a follower started with
        its job: ``run --live``, whose status line counts from the start too)."""
        import datetime

        self.origin = None
        self.seconds(datetime.datetime.now().strftime("%H:%M:%S.%f"))

    def feed(self, record: LiveRecord) -> list[LiveEvent]:
        """The events one record makes (most make none)."""
        at = self.seconds(record.clock)
        meta = record.meta if isinstance(record.meta, dict) else {}
        frame_id = (record.compile_id or "?/").split("/")[0]
        if record.stream not in self.in_progress:
            self.idle_since.setdefault(record.stream, at)
        self._phase(record)
        if record.kind == "dynamo_start":
            frames = [f for f in meta.get("stack") or [] if isinstance(f, dict)]
            if frames:
                top = frames[-1]
                name = f"{top.get('name')} ({_short(top.get('filename'))}:{top.get('line')})"
                self.frames.setdefault((record.stream, frame_id), name)
                self.in_progress[record.stream] = Compiling(name, at)
                self.idle_since.pop(record.stream, None)
            return []
        if record.kind in ("create_symbol", "create_unbacked_symbol") and record.compile_id:
            source = meta.get("source")
            if isinstance(source, str):
                made = self.symbols.setdefault((record.stream, record.compile_id), {})
                made[str(meta.get("symbol"))] = source
            return []
        if record.kind == "symbolic_shape_specialization" and record.compile_id:
            # Python code needed the concrete value: the symbol is gone again.
            self.symbols.get((record.stream, record.compile_id), {}).pop(
                str(meta.get("symbol")), None
            )
            return []
        if record.kind == "artifact" and meta.get("name") == "dynamo_graph_break_reason":
            return self._break(record, at)
        if record.kind == "artifact" and str(meta.get("name")) in _CACHE_LOOKUPS:
            return self._cache(record, str(meta.get("name")), frame_id, at)
        if record.kind == "compilation_metrics":
            self.in_progress.pop(record.stream, None)
            self.idle_since[record.stream] = at
            return self._compiled(record, meta, frame_id, at)
        return []

    def _phase(self, record: LiveRecord) -> None:
        running = self.in_progress.get(record.stream)
        if running is None:
            return
        phase = _PHASE_OF_RECORD.get(record.kind)
        if record.kind == "chromium_event" and record.payload:
            try:
                event = orjson.loads(record.payload)
            except orjson.JSONDecodeError:
                return
            if isinstance(event, dict):
                ends = _PHASE_AFTER_EVENT if event.get("ph") == "E" else _PHASE_OF_EVENT
                phase = ends.get(str(event.get("name")))
        if phase is not None:
            running.phase = phase

    def tick(self, now_s: float) -> list[LiveEvent]:
        """What time alone says, at ``now_s`` on the log's clock: a compile running past
        ``progress_s``, and one rank compiling past ``skew_s`` while the others wait. Each
        is said once per compile."""
        events: list[LiveEvent] = []
        for stream, running in self.in_progress.items():
            took = now_s - running.since
            if took >= self.progress_s and "compiling" not in running.said:
                running.said.add("compiling")
                events.append(LiveEvent("compiling", now_s, f"still compiling {running.frame} "
                                        f"after {took:.0f} s ({running.phase})", running.frame,
                                        stream, seconds=took))  # fmt: skip
            waiting = {other: since for other, since in self.idle_since.items()
                       if other != stream}  # fmt: skip
            if (self.skew_s is None or took < self.skew_s or "rank-skew" in running.said
                    or not waiting or len(waiting) + 1 < len(self._streams())):  # fmt: skip
                continue
            running.said.add("rank-skew")
            rank = _rank(stream)
            others = ", ".join(_rank(other) for other in sorted(waiting, key=_rank))
            wait = now_s - max(waiting.values())
            text = (f"rank {rank} compiling {running.frame} for {took:.0f} s ({running.phase}); "
                    f"rank{'s' if len(waiting) > 1 else ''} {others} waiting since {wait:.0f} s. "
                    f"A collective waits on rank {rank} meanwhile: {SKEW_FIX}")  # fmt: skip
            events.append(LiveEvent("rank-skew", now_s, text, running.frame, stream,
                                    seconds=took))  # fmt: skip
        return events

    def _streams(self) -> set[str]:
        return set(self.in_progress) | set(self.idle_since)

    def _break(self, record: LiveRecord, at: float) -> list[LiveEvent]:
        self.breaks.append(at)
        site = _BREAK_SITE.search(record.payload or "")
        if site is None or site[1] in self.sites:
            return []
        self.sites.add(site[1])
        payload = record.payload or ""
        reason = _BREAK_REASON.search(payload)
        why = reason[1].strip() if reason else ""
        if why.startswith("Encountered graph break"):  # the break's own name comes next
            rest = payload[reason.end() :] if reason else ""
            why = next((line.strip() for line in rest.splitlines() if line.strip()), why)
        file, _, line = site[1].rpartition(":")
        code = re.search(rf'File "{re.escape(file)}", line {line}, in \S+\n\s+(.+)', payload)
        where = f" `{code[1].strip()}`" if code else ""
        text = f"new graph break at {_short(site[1])}{where}: {why}"
        return [LiveEvent("new-break", at, text, stream=record.stream, site=site[1])]

    def _cache(self, record: LiveRecord, name: str, frame_id: str, at: float) -> list[LiveEvent]:
        """A miss on a log whose cache has already hit in this run (the cache was warm, and
        this graph was not in it: it compiles in full), said once per compile."""
        cache, hit = _CACHE_LOOKUPS[name]
        hits = self.cache_hits.get(record.stream, 0)
        if hit:
            self.cache_hits[record.stream] = hits + 1
            return []
        key = (record.stream, record.compile_id or "?")
        if not hits or key in self.cache_missed:
            return []
        self.cache_missed.add(key)
        running = self.in_progress.get(record.stream)
        frame = running.frame if running else self.frames.get((record.stream, frame_id), "?")
        text = (f"cache miss on a warm start: {frame} compiles in full ({cache} cache miss "
                f"after {counted(hits, 'hit')} in this run)")  # fmt: skip
        return [LiveEvent("cache-miss", at, text, frame, record.stream)]

    def _compiled(
        self, record: LiveRecord, meta: dict[str, Any], frame_id: str, at: float
    ) -> list[LiveEvent]:
        name = self.frames.get((record.stream, frame_id)) or (
            f"{meta.get('co_name')} ({_short(meta.get('co_filename'))}:"
            f"{meta.get('co_firstlineno')})"
        )
        events: list[LiveEvent] = []
        fail = str(meta.get("fail_reason") or "")
        if meta.get("fail_type") and _LIMIT.search(fail):
            return [LiveEvent("limit-hit", at, f"recompile limit hit: {name} now runs eagerly "
                              "for every new variant", name, record.stream)]  # fmt: skip
        if meta.get("fail_type"):
            first = fail.splitlines()[0] if fail else str(meta.get("fail_type"))
            return [LiveEvent("compile-failure", at, f"compile failed: {name}: {first[:200]}",
                              name, record.stream)]  # fmt: skip
        self.compiles += 1
        if self.first_compile is None:
            self.first_compile = at
        reason = meta.get("recompile_reason")
        seconds = meta.get("entire_frame_compile_time_s")
        took = f" in {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
        if reason:
            self.recompiles += 1
            late = at - self.first_compile >= self.warmup_s
            kind = "recompile-after-warmup" if late else "recompile"
            self.late += late
            made = self.symbols.get((record.stream, record.compile_id or ""), {})
            what, cause = _what_changed(str(reason), set(made.values()))
            label = "recompile after warmup" if late else "recompile"
            events.append(LiveEvent(kind, at, f"{label} {name}{took}: {what}", name,
                                    record.stream, cause, seconds=_float(seconds)))  # fmt: skip
        else:
            events.append(LiveEvent("compile", at, f"compile {name}{took}", name, record.stream,
                                    seconds=_float(seconds)))  # fmt: skip
        if self.slow_s is not None and isinstance(seconds, (int, float)) and seconds > self.slow_s:
            events.append(LiveEvent("slow-compile", at, f"slow compile: {name} took "
                                    f"{seconds:.1f} s (over {self.slow_s:g} s)", name,
                                    record.stream, seconds=float(seconds)))  # fmt: skip
        return events

    def status(self, now_s: float | None = None) -> str:
        """The status line: compiles so far, recompiles (after warmup), break sites and the
        breaks logged per second over the last 10 s, the compile in progress (its phase); with
        several rank logs, each rank's state (compiling what, or idle since when)."""
        late = f" ({self.late} after warmup)" if self.late else ""
        rate = ""
        if now_s is not None:
            recent = sum(1 for at in self.breaks if now_s - at <= 10.0)
            rate = f" ({recent / 10.0:.1f} breaks/s)" if recent else ""
        running = ""
        ranked = len(self._streams()) > 1
        for stream in sorted(self._streams(), key=_rank) if ranked else list(self.in_progress):
            rank = f"rank {_rank(stream)} " if ranked else ""
            compiling = self.in_progress.get(stream)
            if compiling is None:  # several ranks: each one's state, idle ones too
                idle = self.idle_since.get(stream)
                since = f" {now_s - idle:.0f} s" if now_s is not None and idle is not None else ""
                running += f"; {rank}idle{since}"
                continue
            took = f" {now_s - compiling.since:.0f} s" if now_s is not None else ""
            running += f"; {rank}compiling {compiling.frame} ({compiling.phase}){took}"
        return (f"{counted(self.compiles, 'compile')}, {counted(self.recompiles, 'recompile')}"
                f"{late}, {counted(len(self.sites), 'graph-break site')}{rate}{running}")  # fmt: skip


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _what_changed(reason: str, dynamic: set[str] | None) -> tuple[str, str | None]:
    """Dynamo's failed guard in the user's names (``tokens.shape[1] size 8 → 12 (now
    dynamic)``), the first line of its text when it names nothing known; and the kind of the
    first change."""
    failures = parse_recompile_reason(reason)
    if not failures:
        return reason.splitlines()[0][:200], None
    changes = [to_change(failure, {}) for failure in failures]
    from pt2doctor.analysis.recompiles.sources import user_expr

    made = {user_expr(source).text for source in dynamic or set()}
    folded = fold_changes(changes, made)
    lines = [change_line("", None, change).removeprefix(": ") for change in folded]
    text = "; ".join(lines[:3]) + (f" (+{len(lines) - 3} more)" if len(lines) > 3 else "")
    return text, folded[0].kind if folded else None


def _rank(stream: str) -> str:
    rank = rank_from_filename(Path(stream))
    return "?" if rank is None else str(rank)


def _short(path: Any) -> str:
    """A path's last two parts (``serving/loop.py``)."""
    text = str(path or "?")
    return "/".join(text.split("/")[-2:])
