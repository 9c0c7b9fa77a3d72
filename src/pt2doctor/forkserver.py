"""A fork server for worker processes: one process imports torch and its compiler once, then
forks a child per worker, so each check group and ablate trial starts in ~0.1 s instead of the
~5 s (CPU) that importing torch, Dynamo and Inductor costs a fresh interpreter.

A forked worker is still its own process, leading its own process group (not a session: the
server has no terminal to leave): a segfault, an OOM kill or a hang costs only that worker, and
:func:`pt2doctor.workers.kill_group` stops it and what it started.
What it does not have is a fresh interpreter, so what must be measured in one (check's cold
starts) and every job with its own environment (a variable can be read at import) still gets
``python -m``; so does every job when ``PT2DOCTOR_FRESH_WORKERS=1``.

Forking is safe here because the server never runs a torch operation: no CUDA context, no
OpenMP pool, no compile workers exist to be copied half-alive (torch's DataLoader forks after
far more). The server talks to its parent over its stdin and stdout, one JSON object a line:
``{"module", "args", "cwd", "stdout", "stderr", "warm"}`` in, ``{"pid"}`` back, and
``{"exited": pid, "returncode"}`` when a child ends (it is the child's parent, so it reaps it).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import orjson

FRESH_ENV = "PT2DOCTOR_FRESH_WORKERS"


# ---- the parent side ---------------------------------------------------------------------


class ForkedProcess:
    """A worker forked by the server, with the part of ``subprocess.Popen``'s interface the
    supervisor uses (``pid``, ``poll``, ``wait``, ``returncode``)."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server, self.pid = server, pid
        self.returncode: int | None = None

    def poll(self, wait: float = 0) -> int | None:
        if self.returncode is None:
            self.server.read(wait)
            self.returncode = self.server.exits.pop(self.pid, None)
            if self.returncode is None and self.server.process.poll() is not None:
                self.returncode = -signal.SIGKILL  # the server died, and the news with it
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            returncode = self.poll(0.05 if left is None else max(min(left, 0.05), 0))
            if returncode is not None:
                return returncode
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout or 0)


class ForkServer:
    """The parent's handle on one fork server process (started on first use, closed at exit)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pt2doctor.forkserver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the parent only
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self.buffer = b""
        self.replies: list[dict[str, Any]] = []
        self.exits: dict[int, int] = {}
        self.ready = False  # its imports go on while the parent does its own work
        self.failed = False

    def _wait_ready(self) -> None:
        if not self.ready:
            ready = self._reply()
            if not ready.get("ready"):
                raise OSError(f"fork server did not start: {ready.get('error', 'no reply')}")
            self.ready = True

    def spawn(
        self, module: str, args: list[str], stdout: Path, stderr: Path, warm: str | None = None
    ) -> ForkedProcess:
        """Fork a worker running ``python -m module args``. ``warm="inductor"``: the server
        first does Inductor's CPU probe (once: torch caches it; its children inherit it)."""
        try:
            self._wait_ready()
        except OSError:
            self.failed = True
            raise
        request = {"module": module, "args": args, "cwd": os.getcwd(), "warm": warm,
                   "stdout": str(stdout), "stderr": str(stderr)}  # fmt: skip
        self.stdin.write(orjson.dumps(request) + b"\n")
        self.stdin.flush()
        reply = self._reply()
        if "pid" not in reply:
            raise OSError(f"fork server could not fork: {reply.get('error', 'no reply')}")
        return ForkedProcess(self, int(reply["pid"]))

    def _reply(self) -> dict[str, Any]:
        """The next reply to a request (exit notices that come first are kept)."""
        while not self.replies:
            if not self.read(None):
                return {}
        return self.replies.pop(0)

    def read(self, timeout: float | None) -> bool:
        """Read what the server wrote, waiting up to ``timeout`` seconds (None: until something
        comes); False when nothing came or the server is gone."""
        fd = self.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            if not selector.select(timeout):
                return False
        data = os.read(fd, 1 << 16)
        if not data:
            return False
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            message = orjson.loads(line)
            if "exited" in message:
                self.exits[int(message["exited"])] = int(message["returncode"])
            else:
                self.replies.append(message)
        return True

    def close(self) -> None:
        """End the server: it exits at once on end of input (or is killed: it holds nothing
        that needs flushing)."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=1)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


_SERVER: list[ForkServer] = []


def fork_server() -> ForkServer | None:
    """This process's fork server, started on first use (or early, by a command that will
    launch workers, so its imports overlap the command's own); None when fresh workers are
    asked for or the server cannot start (workers then start with ``python -m``)."""
    if os.environ.get(FRESH_ENV) == "1":
        return None
    if _SERVER:  # one per process: a server that failed or died is not started again
        server = _SERVER[0]
        return None if server.failed or server.process.poll() is not None else server
    try:
        server = ForkServer()
    except OSError:
        return None
    _SERVER[:] = [server]
    atexit.register(server.close)
    return server


# ---- the server side ---------------------------------------------------------------------


def _child(request: dict[str, Any], closing: list[int]) -> None:
    """In the forked child: become a worker started with ``python -m MODULE ARGS``; never
    returns."""
    code = 1
    try:
        with contextlib.suppress(OSError):  # the server does it too: whichever runs first
            os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in closing:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 (the process's own stdout)
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        os.chdir(request["cwd"])
        sys.argv = [request["module"], *request["args"]]
        import runpy

        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        from pt2doctor.workers import exit_now

        exit_now(code)


def _reap(out: int) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        notice = {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)}
        os.write(out, orjson.dumps(notice) + b"\n")


def serve() -> int:
    """The server: preload torch's compiler, then fork a child per request until stdin ends."""
    out = os.dup(1)  # replies go here; nothing else may write to the parent's pipe
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        from pt2doctor import torchcompat

        torchcompat.preload_compiler()
        import pt2doctor.ablate.trial  # what the workers run
        import pt2doctor.check.worker  # noqa: F401
    except Exception as error:  # workers then start fresh
        os.write(out, orjson.dumps({"error": f"{type(error).__name__}: {error}"}) + b"\n")
        return 1
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    os.write(out, b'{"ready": true}\n')
    requests = os.fdopen(0, "rb")
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fd == wake_read:
                with contextlib.suppress(BlockingIOError, InterruptedError):
                    os.read(wake_read, 512)
                _reap(out)
                continue
            line = requests.readline()
            if not line:  # the parent is done: no interpreter teardown (~2 s with torch)
                os._exit(0)
            request = orjson.loads(line)
            if request.get("warm") == "inductor":  # a no-op after the first time
                torchcompat.warm_inductor_cpu()
            try:
                pid = os.fork()
            except OSError as error:
                os.write(out, orjson.dumps({"error": str(error)}) + b"\n")
                continue
            if pid == 0:
                _child(request, [out, wake_read, wake_write, selector.fileno()])
            with contextlib.suppress(OSError):  # its own group before the parent can kill it
                os.setpgid(pid, pid)
            os.write(out, orjson.dumps({"pid": pid}) + b"\n")


if __name__ == "__main__":
    sys.exit(serve())
