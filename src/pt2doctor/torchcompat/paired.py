"""Compiled against eager in the running program (``run --profile``): for a few calls of
each compiled callable, right after its warmup, every other call goes to what the program
compiled (the module or function it passed to torch.compile) instead of the compiled
callable, and each call is timed. The same inputs, the same process, one after the other: a
paired baseline of what dropping torch.compile would give, with no change to the program's
code (torch.compile's result is wrapped when the program makes it). Calling the original is
exact where ``torch.compiler.set_stance("force_eager")`` still pays the compiled wrapper's
own cost, which on a call of tens of microseconds is the difference being measured.

Only public torch API (``torch.compile``); its wrapping goes through dynamo.py's one place.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from pt2doctor.torchcompat.dynamo import _wrap_torch_compile, compiled_target

PAIRS = 10
"""Pairs of calls timed per compiled callable (one compiled, one eager each)."""
MAX_TARGETS = 3
"""Compiled callables paired at most (the first ones made)."""


class PairedCalls:
    """The pairing of one compiled callable: ``warmup`` calls as the program makes them,
    then ``2 * pairs`` calls alternating compiled and eager, each timed; then the result goes
    to ``on_done`` once."""

    def __init__(self, target: dict[str, Any], warmup: int, pairs: int,
                 on_done: Callable[[dict[str, Any]], None]) -> None:  # fmt: skip
        self.target, self.warmup, self.pairs, self.on_done = target, warmup, pairs, on_done
        self.calls = 0
        self.compiled_ms: list[float] = []
        self.eager_ms: list[float] = []
        self.lock = threading.Lock()
        self.done = False

    @property
    def active(self) -> bool:
        """Within the paired calls (what the profile window waits for)."""
        return not self.done and self.calls >= self.warmup

    def call(
        self, compiled: Callable[..., Any], eager_call: Callable[..., Any], args: Any, kwargs: Any
    ) -> Any:
        with self.lock:
            self.calls += 1
            index = self.calls - self.warmup - 1
        if self.done or index < 0:
            return compiled(*args, **kwargs)
        eager = index % 2 == 1
        start = time.perf_counter()
        result = (eager_call if eager else compiled)(*args, **kwargs)
        elapsed = (time.perf_counter() - start) * 1e3
        (self.eager_ms if eager else self.compiled_ms).append(round(elapsed, 6))
        if len(self.eager_ms) >= self.pairs and not self.done:
            self.done = True
            self.on_done({**self.target, "compiled_ms": self.compiled_ms,
                          "eager_ms": self.eager_ms})  # fmt: skip
        return result


def pair_compiled_calls(
    on_done: Callable[[dict[str, Any]], None],
    warmup: int,
    where: Callable[[], dict[str, Any] | None] = lambda: None,
    pairs: int = PAIRS,
) -> list[PairedCalls] | None:
    """Wrap what ``torch.compile`` returns so that its calls are paired as above; the list
    grows with each callable paired (None when torch is not importable). A compiled module's
    ``forward`` is wrapped on the module torch.compile returned; ``module.compile()`` (in
    place) is left alone."""
    paired: list[PairedCalls] = []

    def wrap(original: Any) -> Callable[..., Any]:
        def compile_and_pair(model: Any = None, **kwargs: Any) -> Any:
            compiled = original(model, **kwargs)
            if model is None or len(paired) >= MAX_TARGETS:
                return compiled
            try:
                return _paired(compiled, model)
            except Exception:  # pairing must never break the program's torch.compile call
                return compiled

        def _paired(compiled: Any, model: Any) -> Any:
            target = {**compiled_target(model), **(where() or {})}
            pairing = PairedCalls(target, warmup, pairs, on_done)
            forward = getattr(compiled, "forward", None)
            if hasattr(compiled, "_orig_mod") and callable(forward):
                compiled.forward = functools.wraps(forward)(
                    lambda *a, **k: pairing.call(forward, model, a, k)
                )
                paired.append(pairing)
                return compiled
            if callable(compiled) and callable(model):
                paired.append(pairing)
                return functools.wraps(compiled)(
                    lambda *a, **k: pairing.call(compiled, model, a, k)
                )
            return compiled

        return compile_and_pair

    return paired if _wrap_torch_compile("_pt2doctor_pairs", wrap) else None
