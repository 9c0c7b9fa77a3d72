"""A launcher that replays scripted workers: no process, the same :class:`Outcome` the real
one gives. The events go through a real events.jsonl, :class:`EventTail` and :class:`Flight`
(what is in flight), and :func:`worker_ending` judges the exit; only the process is scripted.
tests/unit/test_workers.py runs the real launcher on the same endings with real processes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pt2doctor.workers import EVENTS, EventTail, Flight, OnEvent, Outcome, Spec, worker_ending


def event(name: str, **fields: Any) -> dict[str, Any]:
    return {"event": name, "t": 0.0, **fields}


@dataclass
class Script:
    """What one worker writes, then how it ends: an exit code (negative: killed by that
    signal), or ``hang=True`` (still running when the launcher's timeout passes)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    returncode: int = 0
    hang: bool = False
    stderr: str = ""


@dataclass
class Launch:
    module: str
    spec: Spec
    out: Path
    idle_timeout: float | None
    total_timeout: float | None
    env: Mapping[str, str] | None


class ScriptedLauncher:
    """Plays one script per launch, in order; records each launch."""

    def __init__(self, *scripts: Script) -> None:
        self.scripts = list(scripts)
        self.launches: list[Launch] = []

    def __call__(
        self,
        module: str,
        spec: Spec,
        out: Path,
        *,
        idle_timeout: float | None = None,
        total_timeout: float | None = None,
        on_event: OnEvent | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Outcome:
        written = orjson.loads(orjson.dumps(spec))  # as the real launcher writes it, at launch
        self.launches.append(Launch(module, written, out, idle_timeout, total_timeout, env))
        script = self.scripts.pop(0)
        out.mkdir(parents=True, exist_ok=True)
        (out / EVENTS).write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in script.events))
        (out / "stderr.log").write_text(script.stderr)
        flight = Flight(EventTail(out / EVENTS), on_event)
        flight.follow()
        if script.hang:
            limit = idle_timeout if idle_timeout is not None else total_timeout
            detail = f"timed out after {limit:g} s"
            return Outcome(flight.tail.events, "timeout", detail, flight.current)
        return worker_ending(script.returncode, flight.tail.events, flight.current, out)
