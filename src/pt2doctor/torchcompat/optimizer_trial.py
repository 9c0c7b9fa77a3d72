"""An eager optimizer's fix, measured in the running program (``run --profile``): once the
profile window is done, at the end of each optimizer's next ``step()``, two fresh optimizers
of the program's class and settings are made over copies of its parameters (with copies of
their gradients): one as the program configured it, one with ``fused=True`` (``foreach=True``
where the class or the device has no fused step), one warm step each, then ``PAIRS`` pairs
of timed steps back to back, their order alternating. (One pair per program step, so the
caches would be as the loop leaves them, was tried and measured worse: 8.4 ms claimed where
the fix saved 3.1, against 4.0-5.0 claimed for 4.5-5.3 back to back; docs/PERFORMANCE.md.)
The program's own parameters, gradients and optimizer state are never touched: what it
computes and prints does not change.

Only public torch API (``torch.optim.optimizer.register_optimizer_step_post_hook``, the
optimizer's constructor and ``param_groups``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

PAIRS = 16
"""Timed steps of each variant (alternating): enough pairs that one preempted step does not
decide (8 flipped the verdict on a busy machine: the third outside review)."""
MAX_ELEMENTS = 25_000_000
"""An optimizer over more parameter elements than this is not tried (the copies' memory)."""
MAX_OPTIMIZERS = 3
_SETTINGS = ("fused", "foreach")


def _clone_groups(optimizer: Any, keep_settings: bool) -> list[dict[str, Any]]:
    """The optimizer's param groups over detached copies of their parameters, each copy with
    a copy of its gradient (``keep_settings``: with the groups' fused/foreach as set)."""
    groups = []
    for group in optimizer.param_groups:
        params = []
        for param in group["params"]:
            copy = param.detach().clone()
            if param.grad is not None:
                copy.grad = param.grad.detach().clone()
            params.append(copy)
        settings = {key: value for key, value in group.items() if key != "params"
                    and (keep_settings or key not in _SETTINGS)}  # fmt: skip
        groups.append({**settings, "params": params})
    return groups


def _timed_steps(optimizers: list[Any], pairs: int, cuda: bool) -> list[list[float]]:
    """``pairs`` rounds stepping each optimizer in turn, the first first on even rounds and
    last on odd ones: the milliseconds of each optimizer's steps."""
    import torch

    times: list[list[float]] = [[] for _ in optimizers]
    for round_ in range(pairs):
        order = range(len(optimizers)) if round_ % 2 == 0 else reversed(range(len(optimizers)))
        for index in order:
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            optimizers[index].step()
            if cuda:
                torch.cuda.synchronize()
            times[index].append(round((time.perf_counter() - start) * 1e3, 6))
    return times


def optimizer_trial(optimizer: Any, pairs: int = PAIRS) -> dict[str, Any]:
    """Time ``optimizer``'s step as configured against its fused (or foreach) variant on
    copies of its parameters: ``optimizer``, ``variant``, ``default_ms``, ``variant_ms``
    (per step) and ``saves_ms`` (the medians' difference), or ``skipped`` with the reason."""
    cls = type(optimizer)
    found: dict[str, Any] = {"optimizer": cls.__name__}
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if not any(p.grad is not None for p in params):
        return {**found, "skipped": "no parameter had a gradient at the step"}
    if sum(p.numel() for p in params) > MAX_ELEMENTS:
        return {**found, "skipped": f"over {MAX_ELEMENTS:,} parameter elements (copies' memory)"}
    if any(group.get("fused") for group in optimizer.param_groups):
        return {**found, "skipped": "the optimizer is already fused"}
    foreach = any(group.get("foreach") for group in optimizer.param_groups)
    for name in ("fused",) if foreach else ("fused", "foreach"):
        try:
            variant = cls(_clone_groups(optimizer, keep_settings=False), **{name: True})
            variant.step()  # a class or device without it fails here, not when timed
        except (TypeError, RuntimeError, ValueError):
            continue
        default = cls(_clone_groups(optimizer, keep_settings=True))
        default.step()  # its state made, as the variant's was: both warm
        cuda = any(p.is_cuda for p in params)
        default_ms, variant_ms = _timed_steps([default, variant], pairs, cuda)
        return {
            **found,
            "variant": f"{name}=True",
            "default_ms": default_ms,
            "variant_ms": variant_ms,
            "saves_ms": round(statistics.median(default_ms) - statistics.median(variant_ms), 6),
        }
    takes = "is foreach and takes no fused=True" if foreach else (
        "takes neither fused=True nor foreach=True")  # fmt: skip
    return {**found, "skipped": f"{cls.__name__} {takes} here"}


def try_optimizer_steps(
    on_done: Callable[[dict[str, Any]], None],
    ready: Callable[[], bool],
    where: Callable[[], dict[str, Any] | None] | None = None,
) -> Callable[[], None] | None:
    """After ``ready()``, each optimizer's next step (up to MAX_OPTIMIZERS) runs
    :func:`optimizer_trial` and sends its result to ``on_done``, with ``step_at``: the user's
    line that called ``step()`` (``where``: the innermost user frame). Returns what removes the
    hook (None: this torch has no global optimizer step hooks)."""
    try:
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook
    except ImportError:
        return None
    tried: set[int] = set()
    busy = [False]

    def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        if busy[0] or id(optimizer) in tried or len(tried) >= MAX_OPTIMIZERS:
            return
        if torch.compiler.is_compiling() or not ready():
            return
        tried.add(id(optimizer))
        busy[0] = True  # the trial's own steps run this hook too
        try:
            with torch.no_grad():
                result = optimizer_trial(optimizer)
        except Exception as error:  # a probe must never break the program's step
            result = {"optimizer": type(optimizer).__name__,
                      "skipped": f"{type(error).__name__}: {error}"[:300]}  # fmt: skip
        finally:
            busy[0] = False
        frame = where() if where is not None else None
        on_done({**result, "step_at": frame} if frame else result)

    handle = register_optimizer_step_post_hook(after_step)
    return handle.remove
