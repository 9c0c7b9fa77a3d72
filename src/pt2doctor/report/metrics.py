"""Compile events as OpenMetrics, through the official ``prometheus_client`` (an optional extra:
``pip install "pt2doctor[metrics]"``), for a Prometheus/Grafana stack scraping a fleet of jobs
(``report --follow --metrics-port N`` or ``--metrics-textfile PATH`` for node_exporter's
textfile collector).

Counters: compiles, recompiles (by frame and the kind of what changed), recompiles after
warmup, limit hits (by frame), graph-break sites and break events (by site), cache lookups
(by cache and outcome), compile seconds (by phase). A gauge: the compile in progress, its
seconds so far (by frame and the phase it is in). Every series is labelled by rank (the log file's name, else
``unknown``). Label values are capped: the first ``cap`` frames and sites seen keep their
names, the rest count as ``other`` (``pt2doctor_label_cap`` says the cap).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pt2doctor.analysis.live import LiveEvent, LiveState
from pt2doctor.errors import UsageError
from pt2doctor.trace.reader import rank_from_filename
from pt2doctor.trace.tail import LiveRecord

INSTALL = "pip install 'pt2doctor[metrics]'"
_PHASES = {
    "entire_frame_compile_time_s": "total",
    "backend_compile_time_s": "backend",
    "inductor_compile_time_s": "inductor",
    "code_gen_time_s": "codegen",
}
_CACHES = {
    "fx_graph_cache_hit": ("fx_graph", "hit"),
    "fx_graph_cache_miss": ("fx_graph", "miss"),
    "fx_graph_cache_bypass": ("fx_graph", "bypass"),
    "aotautograd_cache_hit": ("aotautograd", "hit"),
    "aotautograd_cache_miss": ("aotautograd", "miss"),
    "aotautograd_cache_bypass": ("aotautograd", "bypass"),
}


class LiveMetrics:
    """The metrics of one follower, updated from each record and the events it made."""

    def __init__(self, cap: int = 20) -> None:
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge
        except ImportError as error:
            raise UsageError(f"metrics need prometheus_client, which is not installed here: "
                             f"{INSTALL}") from error  # fmt: skip
        self.cap = cap
        self.registry = CollectorRegistry()
        self.names: dict[str, set[str]] = {"frame": set(), "site": set()}

        def counter(name: str, doc: str, *labels: str) -> Any:
            return Counter(name, doc, ["rank", *labels], registry=self.registry)

        self.compiles = counter("pt2doctor_compiles", "Compiles that produced code")
        self.recompiles = counter("pt2doctor_recompiles", "Recompiles", "frame", "cause")
        self.late = counter("pt2doctor_recompiles_after_warmup", "Recompiles after warmup",
                            "frame")  # fmt: skip
        self.limit_hits = counter("pt2doctor_limit_hits", "Frames at the recompile limit",
                                  "frame")  # fmt: skip
        self.failures = counter("pt2doctor_compile_failures", "Compiles that failed", "frame")
        self.break_sites = counter("pt2doctor_graph_break_sites", "New graph-break sites")
        self.breaks = counter("pt2doctor_graph_break_events", "Graph breaks logged", "site")
        self.cache = counter("pt2doctor_cache_lookups", "Compile cache lookups", "cache",
                             "outcome")  # fmt: skip
        self.seconds = counter("pt2doctor_compile_seconds", "Seconds compiling", "phase")
        self.in_progress = Gauge("pt2doctor_compile_in_progress_seconds",
                                 "Seconds the compile in progress has run",
                                 ["rank", "frame", "phase"], registry=self.registry)  # fmt: skip
        Gauge("pt2doctor_label_cap", "Distinct frame and site label values kept (others: other)",
              registry=self.registry).set(cap)  # fmt: skip
        self._running: set[tuple[str, str, str]] = set()

    def _label(self, kind: str, value: str | None) -> str:
        value = value or "unknown"
        seen = self.names[kind]
        if value in seen:
            return value
        if len(seen) < self.cap:
            seen.add(value)
            return value
        return "other"

    @staticmethod
    def _rank(stream: str) -> str:
        rank = rank_from_filename(Path(stream))
        return "unknown" if rank is None else str(rank)

    def observe(self, record: LiveRecord, events: list[LiveEvent], state: LiveState) -> None:
        rank = self._rank(record.stream)
        meta = record.meta if isinstance(record.meta, dict) else {}
        if record.kind == "artifact":
            found = _CACHES.get(str(meta.get("name")))
            if found is not None:
                self.cache.labels(rank, *found).inc()
            if meta.get("name") == "dynamo_graph_break_reason":
                site = (
                    (record.payload or "")
                    .split("\n", 1)[0]
                    .removeprefix("Graph break in user code at ")
                )
                self.breaks.labels(rank, self._label("site", site)).inc()
        if record.kind == "compilation_metrics":
            for key, phase in _PHASES.items():
                value = meta.get(key)
                if isinstance(value, (int, float)):
                    self.seconds.labels(rank, phase).inc(float(value))
        for event in events:
            frame = self._label("frame", event.frame)
            if event.kind in ("compile", "recompile", "recompile-after-warmup"):
                self.compiles.labels(rank).inc()
            if event.kind in ("recompile", "recompile-after-warmup"):
                self.recompiles.labels(rank, frame, event.cause or "other").inc()
            if event.kind == "recompile-after-warmup":
                self.late.labels(rank, frame).inc()
            if event.kind == "limit-hit":
                self.limit_hits.labels(rank, frame).inc()
            if event.kind == "compile-failure":
                self.failures.labels(rank, frame).inc()
            if event.kind == "new-break":
                self.break_sites.labels(rank).inc()

    def progress(self, state: LiveState, now_s: float) -> None:
        """The compile in progress per log and its phase, as seconds so far (0 once it is
        done or in another phase)."""
        running = set()
        for stream, compiling in state.in_progress.items():
            key = (self._rank(stream), self._label("frame", compiling.frame), compiling.phase)
            running_s = now_s - compiling.since
            self.in_progress.labels(*key).set(running_s if 0 <= running_s < 86400 else 0.0)
            running.add(key)
        for key in self._running - running:
            self.in_progress.labels(*key).set(0.0)
        self._running = running

    def serve(self, port: int) -> None:
        from prometheus_client import start_http_server

        try:
            self._server = start_http_server(port, registry=self.registry)
        except OSError as error:
            raise UsageError(f"cannot serve metrics on port {port}: {error.strerror}") from error

    def close(self) -> None:
        """Stop serving (prometheus_client >= 0.17 returns its server)."""
        server = getattr(self, "_server", None)
        if isinstance(server, tuple) and server and hasattr(server[0], "shutdown"):
            server[0].shutdown()
            server[0].server_close()

    def write(self, path: Path) -> None:
        from prometheus_client import write_to_textfile

        try:
            write_to_textfile(str(path), self.registry)
        except OSError as error:
            raise UsageError(f"cannot write {path}: {error.strerror}") from error
