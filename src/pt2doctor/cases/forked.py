"""Run one compile-and-compare in a forked child, so the memory it takes goes away with it.

Each Inductor compile grows a process by a few MB that never comes back (its caches, the
loaded kernels, the allocator's fragments); a search that compiles twenty modules in one process
ends hundreds of MB above what it holds. ``in_child(fn)`` forks, runs ``fn()`` in the child,
sends its result (pickled) back over a pipe and lets the child exit: the parent stays at what
it held before, and the peak is one compile's over it.

The child runs torch with one intra-op thread. The OpenMP runtime torch's CPU build uses does
not survive a fork once the parent has used its thread pool (an eager op in the child then
waits forever on threads that are not there); one thread needs no pool. Inductor's CPU kernels
specialize on the thread count, and their cache key includes it, so a child's kernels are never
served to a multi-threaded process. What changes is the order of a parallel reduction, far
below any tolerance the comparison uses.

Where a fork cannot be used, ``fn()`` runs here as before: no ``os.fork`` (Windows), CUDA
initialized (a forked child cannot use it), or ``PT2DOCTOR_NUMERICS_IN_PROCESS=1``.
"""

from __future__ import annotations

import functools
import os
import pickle
import sys
import traceback
from collections.abc import Callable
from typing import TypeVar

from pt2doctor.torchcompat.inductor import inductor_config_patch

T = TypeVar("T")

IN_PROCESS_ENV = "PT2DOCTOR_NUMERICS_IN_PROCESS"


CHILD_TIMEOUT = 1800.0
"""Seconds a child may take (one compile and its comparison): past it, it is stopped."""


class ChildFailed(RuntimeError):
    """The child raised an exception that could not be sent back as itself (its traceback
    text is the message), or died without a result."""


def can_fork() -> bool:
    """Whether ``in_child`` forks here (see the module's doc)."""
    if not hasattr(os, "fork") or os.environ.get(IN_PROCESS_ENV) == "1":
        return False
    import torch

    initialized: Callable[[], bool] = getattr(torch.cuda, "is_initialized")  # noqa: B009
    return not initialized()


def in_child(fn: Callable[[], T], fork: bool = True, timeout: float = CHILD_TIMEOUT) -> T:
    """``fn()``, run in a forked child where ``fork`` and it can be (else here); its
    exception re-raised. A child silent for ``timeout`` seconds is killed (``ChildFailed``)."""
    if not fork or not can_fork():
        return fn()
    trim_heap()
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        code = 0
        try:
            import torch

            torch.set_num_threads(1)
            with inductor_config_patch(compile_threads=1):  # no pool of compile workers
                payload = pickle.dumps(("ok", fn()))
        except BaseException as error:
            code = 1
            try:
                payload = pickle.dumps(("raised", error))
            except Exception:  # an exception that does not pickle: its text
                payload = pickle.dumps(("text", traceback.format_exc()))
        try:
            with os.fdopen(write, "wb") as pipe:
                pipe.write(payload)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    os.close(write)
    data = _read_all(read, pid, timeout)
    _, status = os.waitpid(pid, 0)
    if data is None:
        raise ChildFailed(f"the forked child gave no result in {timeout:.0f} s and was stopped")
    if not data:
        raise ChildFailed(f"the forked child exited without a result (wait status {status})")
    kind, value = pickle.loads(data)
    if kind == "ok":
        return value  # type: ignore[no-any-return]
    if kind == "raised":
        raise value
    raise ChildFailed(value)


def trim_heap() -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``): after a
    large value is let go, and before forking, so that the child starts from what the parent
    holds, not from what it once held. Elsewhere a no-op."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """libc's ``malloc_trim``, looked up once (``find_library`` runs ``ldconfig``: ~1 ms a
    call), or None where the C library has none."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    trim: Callable[[int], int] | None = getattr(libc, "malloc_trim", None)
    return trim


def _read_all(fd: int, pid: int, timeout: float) -> bytes | None:
    """Everything the child writes to ``fd`` until it closes it, or None (the child killed)
    when ``timeout`` seconds pass first."""
    import select
    import signal
    import time

    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                os.kill(pid, signal.SIGKILL)
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)
