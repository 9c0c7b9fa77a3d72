"""A fork server for worker processes: one process imports torch and its compiler once, then
forks a child per worker, so each check group and ablate trial starts in ~0.1 s instead of the
~5 s (CPU) that importing torch, Dynamo and Inductor costs a fresh interpreter.

A forked worker is still its own process, leading its own process group (not a session: the
server has no terminal to leave): a segfault, an OOM kill or a hang costs only that worker, and
:func:`pt2doctor.workers.kill_group` stops it and what it started.
What it does not have is a fresh interpreter, so what must be measured in one (check's cold
starts) and every job with its own environment (a variable can be read at import) still gets
``python -m``; so does every job when ``PT2DOCTOR_FRESH_WORKERS=1``.

The server is itself forked from the command, right after the command has imported torch, Dynamo
and Inductor (which it needs anyway) and before it runs the user's case file: the imports are
paid once, and no worker inherits the user's module (its custom ops register again in each).
Forking is safe because neither the command before that point nor the server runs a torch
operation: no CUDA context, no OpenMP pool, no compile workers exist to be copied half-alive
(torch's DataLoader forks after far more). The server talks to its parent over two pipes, one
JSON object a line: ``{"module", "args", "cwd", "stdout", "stderr", "warm"}`` in, ``{"pid"}``
back, and ``{"exited": pid, "returncode"}`` when a child ends (it is the child's parent, so it
reaps it).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib
import os
import selectors
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

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


class ServerProcess:
    """The forked server as its parent sees it: the part of ``subprocess.Popen`` that
    :class:`ForkServer` uses (``pid``, ``poll``, ``wait``, ``kill``)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: gone all the same
                self.returncode = -signal.SIGKILL
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while (returncode := self.poll()) is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"fork server {self.pid}", timeout)
            time.sleep(0.01)
        return returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


class ForkServer:
    """The parent's handle on one fork server process (closed at exit). Creating it imports
    torch's compiler in this process, then forks the server from it."""

    def __init__(self) -> None:
        from pt2doctor import torchcompat

        torchcompat.preload_compiler()  # here, so that the server and this process share it
        requests, to_server = os.pipe()
        from_server, replies = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
            with contextlib.suppress(Exception):
                stream.flush()
        pid = os.fork()
        if pid == 0:
            _become_server(requests, replies, [to_server, from_server])
        os.close(requests)
        os.close(replies)
        self.process = ServerProcess(pid)
        self.stdin, self.stdout = os.fdopen(to_server, "wb"), os.fdopen(from_server, "rb")
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
            self.process.wait(timeout=5)


_SERVER: list[ForkServer] = []


def exit_now(code: int) -> NoReturn:
    """End this process the quick way once its work is done: exit handlers run and the standard
    streams are flushed, but the interpreter is not torn down (with torch, Dynamo and Inductor
    imported that takes ~1.3 s on 2 cores, and frees nothing a finished process needs)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def start_fork_server() -> ForkServer | None:
    """Start this process's fork server, once: called by a command that will launch workers,
    as soon as its input is known to be good and before it runs the user's case file. None
    when fresh workers are asked for or the server cannot start (workers then start with
    ``python -m``)."""
    if os.environ.get(FRESH_ENV) == "1" or _SERVER:
        return fork_server()
    try:
        server = ForkServer()
    except (OSError, ImportError):  # no fork, no pipes, or torch does not import: start fresh
        return None
    _SERVER[:] = [server]
    atexit.register(server.close)
    return server


def fork_server() -> ForkServer | None:
    """This process's fork server, if it started one and the server still runs (None also when
    fresh workers are asked for)."""
    if os.environ.get(FRESH_ENV) == "1" or not _SERVER:
        return None
    server = _SERVER[0]  # one per process: a server that failed or died is not started again
    return None if server.failed or server.process.poll() is not None else server


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


def _become_server(requests: int, replies: int, closing: list[int]) -> NoReturn:
    """In the child just forked from the command: leave its session (a Ctrl-C in the terminal
    reaches the command only) and its standard streams, serve, and never return."""
    code = 1
    try:
        os.setsid()
        for fd in closing:
            os.close(fd)
        # The pipes must not sit on 0-2, which become /dev/null.
        requests, replies = (fcntl.fcntl(fd, fcntl.F_DUPFD, 3) for fd in (requests, replies))
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        code = serve(requests, replies)
    finally:
        os._exit(code)


def preload(module: str) -> None:
    """Import the worker module a request names, here in the server, once: every later child
    forked for it starts with it (and what it imports) loaded. The server knows no worker by
    name; a module that fails to import fails in the child, where its traceback is kept."""
    with contextlib.suppress(Exception):
        importlib.import_module(module)  # a no-op once imported


def serve(requests_fd: int, out: int) -> int:
    """The server: fork a child per request read from ``requests_fd`` until it ends; replies
    and exit notices go to ``out``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # torch's compiler is here already: the command imported it before forking
        from pt2doctor import torchcompat
    except Exception as error:  # workers then start fresh
        os.write(out, orjson.dumps({"error": f"{type(error).__name__}: {error}"}) + b"\n")
        return 1
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    os.write(out, b'{"ready": true}\n')
    requests = os.fdopen(requests_fd, "rb")
    selector = selectors.DefaultSelector()
    selector.register(requests_fd, selectors.EVENT_READ)
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
            preload(request["module"])
            try:
                pid = os.fork()
            except OSError as error:
                os.write(out, orjson.dumps({"error": str(error)}) + b"\n")
                continue
            if pid == 0:
                _child(request, [requests_fd, out, wake_read, wake_write, selector.fileno()])
            with contextlib.suppress(OSError):  # its own group before the parent can kill it
                os.setpgid(pid, pid)
            os.write(out, orjson.dumps({"pid": pid}) + b"\n")
