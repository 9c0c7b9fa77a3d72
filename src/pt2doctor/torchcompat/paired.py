"""Compiled against eager in the running program (``run --profile``): for a few calls of
each compiled callable, once the profile window is done, every other call goes to what the program
compiled (the module or function it passed to torch.compile) instead of the compiled
callable, and each call is timed. The same inputs, the same process, one after the other: a
paired baseline of what dropping torch.compile would give, with no change to the program's
code (torch.compile's result is wrapped when the program makes it). Calling the original is
exact where ``torch.compiler.set_stance("force_eager")`` still pays the compiled wrapper's
own cost, which on a call of tens of microseconds is the difference being measured.

Only public torch API (``torch.compile``); its wrapping goes through dynamo.py's one place.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from pt2doctor.torchcompat.dynamo import Call, compiled_target, intercept_compiled_calls

PAIRS = 20
"""Pairs of calls timed per compiled callable at least (one compiled, one eager each)."""
TIMED_MS = 30.0
"""Time the pairs of a callable span at least, when MAX_PAIRS allows: a call of tens of
microseconds is timed over more pairs than a call of milliseconds (20 pairs of a 0.1 ms decode
step vary by half their difference from one run to the next)."""
BLOCK = 4
"""Calls in a row to one side before switching to the other; the first of each is not timed.
Calls alternating one by one evict each other's caches: a 0.1 ms decode step's eager call
took 1.7x its time in a run of eager calls, which served eagerly is what it would be."""
MAX_PAIRS = 150
"""Pairs of calls timed per compiled callable at most."""
MAX_TARGETS = 3
"""Compiled callables paired at most (the first ones made)."""
PLAIN = 60
"""Compiled calls timed once the pairs are done, as the program makes them (no eager call
between them, no profiler): what a fix of the compiled call is judged by in a try
(analysis/findings/verdicts.py ``call_times``)."""


def _compiling() -> bool:
    import torch

    return bool(torch.compiler.is_compiling())


class PairedCalls:
    """The pairing of one compiled callable: the calls before ``ready()`` as the program
    makes them, then one untimed pair, then calls alternating compiled and eager, each timed,
    until ``pairs`` pairs spanning TIMED_MS (or MAX_PAIRS pairs); then the result goes to ``on_done`` once (``finish`` sends what a program that
    ended sooner gave)."""

    def __init__(self, target: dict[str, Any], ready: Callable[[], bool], pairs: int,
                 on_done: Callable[[dict[str, Any]], None]) -> None:  # fmt: skip
        self.target, self.ready, self.pairs, self.on_done = target, ready, pairs, on_done
        self.calls = 0
        self.compiled_ms: list[float] = []
        self.eager_ms: list[float] = []
        self.plain_ms: list[float] = []
        self.lock = threading.Lock()
        self.done = False

    def call(
        self, compiled: Callable[..., Any], eager_call: Callable[..., Any], args: Any, kwargs: Any
    ) -> Any:
        if self.done and len(self.plain_ms) < PLAIN and not _compiling():
            start = time.perf_counter()
            result = compiled(*args, **kwargs)
            self.plain_ms.append(round((time.perf_counter() - start) * 1e3, 6))
            return result
        if self.done or not self.ready() or _compiling():  # called from compiled code
            return compiled(*args, **kwargs)
        with self.lock:
            index = self.calls
            self.calls += 1
        eager = index // BLOCK % 2 == 1
        if index % BLOCK == 0:  # a block's first call is not timed: it pays the switch
            return (eager_call if eager else compiled)(*args, **kwargs)
        start = time.perf_counter()
        result = (eager_call if eager else compiled)(*args, **kwargs)
        elapsed = (time.perf_counter() - start) * 1e3
        (self.eager_ms if eager else self.compiled_ms).append(round(elapsed, 6))
        if self._enough():
            self.finish()
        return result

    def _enough(self) -> bool:
        pairs = len(self.eager_ms)
        spent = sum(self.eager_ms) + sum(self.compiled_ms)
        return pairs >= self.pairs and (spent >= TIMED_MS or pairs >= MAX_PAIRS)

    def finish(self) -> None:
        """Send the pairs timed so far, once (none: nothing is sent)."""
        with self.lock:
            if self.done or not self.eager_ms:
                return
            self.done = True
        self.on_done({**self.target, "compiled_ms": self.compiled_ms, "eager_ms": self.eager_ms})

    def plain(self) -> dict[str, Any] | None:
        """The compiled calls timed after the pairs (at exit), None when there were none."""
        return {**self.target, "plain_ms": self.plain_ms} if self.plain_ms else None


def pair_compiled_calls(
    on_done: Callable[[dict[str, Any]], None],
    ready: Callable[[], bool],
    where: Callable[[], dict[str, Any] | None] = lambda: None,
    pairs: int = PAIRS,
) -> list[PairedCalls] | None:
    """Wrap what ``torch.compile`` returns so that its calls are paired as above; the list
    grows with each callable paired (None when torch is not importable). A compiled module's
    ``forward`` is wrapped on the module torch.compile returned; ``module.compile()`` (in
    place) is left alone."""
    paired: list[PairedCalls] = []

    def make(compiled: Any, model: Any) -> Call | None:
        if len(paired) >= MAX_TARGETS or not callable(model):
            return None
        pairing = PairedCalls({**compiled_target(model), **(where() or {})}, ready, pairs, on_done)
        paired.append(pairing)
        return lambda function, args, kwargs: pairing.call(function, model, args, kwargs)

    return paired if intercept_compiled_calls("_pt2doctor_pairs", make) else None
