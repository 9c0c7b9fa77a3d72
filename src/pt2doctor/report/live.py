"""One follower of growing TORCH_TRACE logs for every command that shows live events:
``report --follow`` (its own polling loop), ``run --live`` / ``run --metrics-port`` and
``watch(metrics_port=N)`` (a trace/tail.py ``TailThread``).

Each batch of records goes to analysis/live.py's ``LiveState``; while the job runs, a batch
also ticks the state (a compile still running, a rank compiling alone). The events become
lines (the command's ``show``), metrics (report/metrics.py: served on a port, written to a
node_exporter textfile), and the first event ``fail_on`` names is kept (``--fail-on``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from pt2doctor.analysis.live import LiveEvent, LiveState
from pt2doctor.errors import Pt2DoctorError
from pt2doctor.trace.tail import LiveRecord


class LiveFollower:
    """Records in, events out (``show``), metrics kept. The metrics port is bound and the
    textfile written once when it is made, so a busy port or an unwritable path is the
    command's one-line error before anything runs."""

    def __init__(
        self,
        state: LiveState,
        show: Callable[[LiveEvent], None] | None = None,
        fail_on: tuple[str, ...] = (),
        metrics_port: int | None = None,
        metrics_textfile: Path | None = None,
    ) -> None:
        self.state, self.show, self.fail_on = state, show, fail_on
        self.textfile = metrics_textfile
        self.failed: LiveEvent | None = None
        self.metrics = None
        if metrics_port is not None or metrics_textfile is not None:
            from pt2doctor.report.metrics import LiveMetrics

            self.metrics = LiveMetrics()
            if metrics_textfile is not None:
                self.metrics.write(metrics_textfile)
            if metrics_port is not None:
                self.metrics.serve(metrics_port)

    def handle(self, records: list[LiveRecord], final: bool = False) -> LiveEvent | None:
        """Feed ``records``; ``final``: the job is over (nothing is still compiling, so no
        tick). Returns the first ``fail_on`` event seen so far; the batch it came in is shown
        up to that record."""
        batches: list[tuple[LiveRecord | None, list[LiveEvent]]] = [
            (record, self.state.feed(record)) for record in records
        ]
        if not final:
            batches.append((None, self.state.tick(self.state.now_s())))
        for record, events in batches:
            if self.metrics is not None and record is not None:
                self.metrics.observe(record, events, self.state)
            for event in events:
                if self.show is not None:
                    self.show(event)
                if event.kind in self.fail_on and self.failed is None:
                    self.failed = event
            if self.failed is not None:
                break
        self._export()
        return self.failed

    def _export(self) -> None:
        if self.metrics is None:
            return
        self.metrics.progress(self.state, self.state.now_s())
        if self.textfile is None:
            return
        try:
            self.metrics.write(self.textfile)
        except Pt2DoctorError as error:  # said once; the events go on
            sys.stderr.write(f"pt2doctor: {error}; the metrics textfile is no longer written\n")
            self.textfile = None

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.close()
