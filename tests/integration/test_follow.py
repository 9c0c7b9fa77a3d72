"""``pt2doctor report --follow``: a job's TORCH_TRACE read while it runs (a job pt2doctor did
not start), one explained line per notable event, checked against the raw trace (oracles.py).

A real program runs in the background with TORCH_TRACE; the follower is its own process, as a
sidecar is. And a log grown by hand, in pieces cut mid-line, then truncated: each poll reads
only the new bytes and hands over whole records."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import CORPUS_DIR
from oracles import raw_file_records, raw_records

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


def _job(program: str, trace: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(PROGRAMS / program)],
                            env={**env, "TORCH_TRACE": str(trace)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def _follow(trace: Path, pid: int, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pt2doctor", "report", "--follow", str(trace),
                           "--until-exit", str(pid), "--warmup", "1000", *flags],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def _metrics(trace: Path) -> list[dict[str, Any]]:
    return [e["compilation_metrics"] for e, _ in raw_records(trace) if "compilation_metrics" in e]


def test_a_running_job_s_recompiles_and_limit_hit_are_said_as_they_come(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    """limit_hit.py: six string modes under recompile_limit = 3. The follower, started beside
    the job, says its first compile, each recompile with the value that changed, and the limit
    hit; with --fail-on limit-hit it exits 1 on that line."""
    trace = tmp_path / "trace"
    job = _job("limit_hit.py", trace, run_env)
    done = _follow(trace, job.pid, "--fail-on", "limit-hit")
    job.wait(timeout=120)
    metrics = _metrics(trace)
    recompiles = [m for m in metrics if m.get("recompile_reason") and not m.get("fail_type")]
    limited = [m for m in metrics if m.get("fail_type")]
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stderr
    assert sum(" recompile step (" in line for line in lines) == len(recompiles) == 2
    assert "mode value 'a'" in done.stdout
    assert len(limited) == 1 and "recompile limit hit: step (" in lines[-1]
    assert "--fail-on limit-hit: recompile limit hit" in done.stderr


def test_a_size_that_becomes_dynamic_and_a_new_break_site_read_in_the_users_words(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    trace = tmp_path / "size"
    job = _job("size_recompile.py", trace, run_env)
    done = _follow(trace, job.pid)
    job.wait(timeout=120)
    assert done.returncode == 0, done.stderr
    assert "x.shape[0] size 4 → 5 (now dynamic)" in done.stdout
    broken = tmp_path / "break"
    job = _job("item_break.py", broken, run_env)
    done = _follow(broken, job.pid, "--fail-on", "new-break")
    job.wait(timeout=120)
    line = next(i for i, text in enumerate((PROGRAMS / "item_break.py").read_text().splitlines(), 1)
                if "if y.sum().item() > 0:" in text)  # fmt: skip
    assert done.returncode == 1
    assert (
        f"new graph break at programs/item_break.py:{line} `if y.sum().item() > 0:" in done.stdout
    )
    assert "Unsupported Tensor.item() call" in done.stdout


@pytest.mark.corpus
def test_a_log_grown_in_pieces_then_truncated_is_read_once_whole(tmp_path: Path) -> None:
    from pt2doctor.trace.tail import Tail

    source = CORPUS_DIR / "tlparse-inputs" / "inputs" / "cache_hit_miss.log"
    data = source.read_bytes()
    kinds = []
    for envelope, _ in _records_of(source):
        kind = _kind(envelope)
        if kind != "str":
            kinds.append(kind)
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "rank0.log"
    tail = Tail(folder)
    seen = []
    for cut in (len(data) // 3 + 7, 2 * len(data) // 3 + 3, len(data)):  # mid-line cuts
        log.write_bytes(data[:cut])
        seen += tail.poll()
    seen += tail.flush()
    assert [r.kind for r in seen] == kinds
    assert tail.bytes_read == len(data)
    assert tail.poll() == [] and tail.bytes_read == len(data)  # nothing new: nothing read
    # A second rank appears later; then the first is truncated and written again.
    shutil.copy(source, folder / "rank1.log")
    assert [r.kind for r in tail.flush()] == kinds
    log.write_bytes(data[: len(data) // 2])
    again = tail.poll()
    assert tail.restarts == 1 and again and [r.kind for r in again] == kinds[: len(again)]


def _records_of(path: Path) -> list[tuple[dict[str, Any], str]]:
    from oracles import raw_file_records

    return list(raw_file_records(path))


def _kind(envelope: dict[str, Any]) -> str:
    meta = ("frame_id", "frame_compile_id", "attempt", "has_payload", "rank", "stack",
            "compiled_autograd_id")  # fmt: skip
    return next(key for key in envelope if key not in meta)


def _families(text: str) -> list[Any]:
    """An OpenMetrics text read with prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    return list(text_string_to_metric_families(text))


def _series(text: str) -> dict[str, float]:
    """The samples of an OpenMetrics text, summed by sample name
    (``pt2doctor_compiles_total``) over their labels."""
    found: dict[str, float] = {}
    for family in _families(text):
        for sample in family.samples:
            found[sample.name] = found.get(sample.name, 0.0) + sample.value
    return found


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_events_are_metrics_in_a_textfile_and_on_a_port(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    """limit_hit.py followed with --metrics-textfile: the counters are the raw trace's; the
    same follower serving --metrics-port is scraped over HTTP while it waits for a job."""
    import time
    import urllib.request

    trace, prom = tmp_path / "trace", tmp_path / "pt2doctor.prom"
    job = _job("limit_hit.py", trace, run_env)
    done = _follow(trace, job.pid, "--metrics-textfile", str(prom))
    job.wait(timeout=120)
    assert done.returncode == 0, done.stderr
    metrics = _metrics(trace)
    series = _series(prom.read_text())
    assert series["pt2doctor_compiles_total"] == sum(1 for m in metrics if not m.get("fail_type"))
    assert series["pt2doctor_recompiles_total"] == 2
    assert series["pt2doctor_limit_hits_total"] == 1
    assert 'rank="unknown"' in prom.read_text() and series["pt2doctor_label_cap"] == 20
    port = _free_port()
    waiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    server = subprocess.Popen([sys.executable, "-m", "pt2doctor", "report", "--follow",
                               str(trace), "--until-exit", str(waiting.pid),
                               "--metrics-port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        scraped: dict[str, float] = {}
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    scraped = _series(r.read().decode())
                if scraped.get("pt2doctor_limit_hits_total"):
                    break
            except OSError:
                pass
            time.sleep(0.2)
        assert scraped["pt2doctor_recompiles_total"] == 2
        assert scraped["pt2doctor_limit_hits_total"] == 1
    finally:
        waiting.kill()
        server.wait(timeout=30)


def test_watch_serves_the_compile_events_of_its_own_process_as_metrics() -> None:
    """``pt2doctor.watch(metrics_port=N)``: a size recompile and a limit hit in this process,
    scraped from the port while the watch runs; the port is closed after it."""
    import time
    import urllib.request

    torch = pytest.importorskip("torch")
    import pt2doctor

    port = _free_port()

    def step(x: Any, mode: str) -> Any:
        return x + 1 if mode == "a" else x * len(mode)

    torch.compiler.reset()
    url = f"http://127.0.0.1:{port}/metrics"
    with torch._dynamo.config.patch(recompile_limit=2), pt2doctor.watch(metrics_port=port) as w:
        compiled = torch.compile(step, backend="eager")
        for mode in ("a", "bb", "ccc", "dddd"):
            compiled(torch.ones(3), mode)
        scraped: dict[str, float] = {}
        for _ in range(50):
            with urllib.request.urlopen(url, timeout=2) as response:
                scraped = _series(response.read().decode())
            if scraped.get("pt2doctor_limit_hits_total"):
                break
            time.sleep(0.2)
        frames = {f["function"]: f for f in w.report()["frames"]}
    assert scraped["pt2doctor_compiles_total"] == frames["step"]["variants"] == 2
    assert scraped["pt2doctor_recompiles_total"] == 1
    assert scraped["pt2doctor_limit_hits_total"] == 1
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)


def test_run_live_explains_the_events_on_stderr_while_the_program_runs(doctor_run: Any) -> None:
    """``run --live`` (on by default at a terminal): the recompiles and the limit hit of
    limit_hit.py on stderr as they happen, before the report; ``--no-live`` says nothing."""
    live = doctor_run("live_limit_hit", ["--live", "--backend", "eager"], "../limit_hit")
    quiet = doctor_run("no_live_limit_hit", ["--no-live", "--backend", "eager"], "../limit_hit")
    lines = [line for line in live.stderr.splitlines() if line.startswith("pt2doctor: ")]
    assert sum(" recompile step (" in line for line in lines) == 2
    assert any("recompile limit hit: step (" in line for line in lines)
    assert live.stderr.index("recompile limit hit") < live.stderr.index("What to do first")
    assert "recompile limit hit: step (" not in quiet.stderr


def test_a_compile_in_progress_has_its_phase_and_a_lone_compiling_rank_is_skew(
    tmp_path: Path,
) -> None:
    """simple.log (an Inductor compile) as two rank logs: rank 0 whole, rank 1 cut just after
    its Inductor lowering began. While rank 1 is cut there, the state names its phase from the
    log's own chromium event, ``tick`` past ``progress_s`` says it is still compiling, and past
    ``skew_s`` says rank 1 compiles while rank 0, done, waits; each once."""
    from pt2doctor.analysis.live import LiveState
    from pt2doctor.trace.tail import Tail

    data = (CORPUS_DIR / "tlparse-inputs" / "inputs" / "simple.log").read_bytes()
    lowering = data.index(b'"name": "GraphLowering.run"')
    cut = data.index(b"\nV", lowering) + 1  # the record after that event: it is whole
    folder = tmp_path / "trace"
    folder.mkdir()
    (folder / "dedicated_log_torch_trace_rank_0_a.log").write_bytes(data)
    (folder / "dedicated_log_torch_trace_rank_1_b.log").write_bytes(data[:cut])
    state = LiveState(progress_s=5.0, skew_s=20.0)
    for record in Tail(folder).poll():
        state.feed(record)
    [(stream, running)] = state.in_progress.items()
    assert "rank_1" in stream and running.phase == "Inductor lowering"
    assert running.frame.startswith("forward (")
    assert state.tick(running.since + 1.0) == []
    [still] = state.tick(running.since + 6.0)
    assert still.kind == "compiling" and "(Inductor lowering)" in still.text
    [skew] = state.tick(running.since + 21.0)
    assert skew.kind == "rank-skew"
    assert skew.text.startswith(f"rank 1 compiling {running.frame} for 21 s (Inductor lowering)")
    assert "rank 0 waiting since" in skew.text and "warm the compile cache" in skew.text
    assert state.tick(running.since + 40.0) == []
    status = state.status(running.since + 40.0)
    assert "; rank 0 idle " in status and "; rank 1 compiling forward (" in status
    assert status.index("rank 0 idle") < status.index("rank 1 compiling")
    from prometheus_client import generate_latest

    from pt2doctor.report.metrics import LiveMetrics

    metrics = LiveMetrics()
    metrics.progress(state, running.since + 40.0)
    [gauge] = [sample for family in _families(generate_latest(metrics.registry).decode())
               for sample in family.samples
               if sample.name == "pt2doctor_compile_in_progress_seconds"]  # fmt: skip
    assert gauge.labels == {"rank": "1", "frame": running.frame, "phase": "Inductor lowering"}
    assert gauge.value == pytest.approx(40.0)


def test_run_live_says_a_late_recompile_while_the_program_waits_and_its_metrics_match(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    """run_serving_loop.py under ``run --live --steady-after 1 --metrics-port P``: the
    explained recompile-after-warmup line arrives while the program still waits to be
    released (its next marker comes only after the test has read the lines of the frame and
    its resume function); the metrics scraped over HTTP then, parsed with prometheus_client's parser, equal the final report's
    counts; the textfile written beside them holds the same counters."""
    import threading
    import urllib.request

    port, release, out = _free_port(), tmp_path / "release", tmp_path / "run"
    prom = tmp_path / "live.prom"
    script = PROGRAMS / "run" / "run_serving_loop.py"
    flags = ["--live", "--steady-after", "1", "--backend", "eager", "--metrics-port", str(port),
             "--metrics-textfile", str(prom)]  # fmt: skip
    job = subprocess.Popen([sys.executable, "-m", "pt2doctor", "run", "--out", str(out), *flags,
                            "--", sys.executable, str(script), str(release)], env=run_env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    assert job.stdout is not None
    lines: list[str] = []
    late = threading.Event()

    def read() -> None:
        assert job.stdout is not None
        for line in job.stdout:
            lines.append(line)
            # forward, then its resume function (the two may come in two polls)
            if sum("recompile after warmup " in seen for seen in lines) == 2:
                late.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert late.wait(timeout=120), "".join(lines)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            scraped = _series(response.read().decode())
        seen = "".join(lines)
    finally:
        release.touch()
        job.wait(timeout=120)
        reader.join(timeout=10)
    assert job.returncode == 0, "".join(lines)
    assert "request of 12 tokens" in seen and "released" not in seen.split("request of 12")[1]
    assert "tokens.shape[1] size 8 → 12 (now dynamic)" in seen
    summary = json.loads((out / "report.json").read_text())["summary"]
    assert summary["recompiles"] == 2 and summary["break_sites"] == 1
    assert scraped["pt2doctor_compiles_total"] == summary["compiles"]
    assert scraped["pt2doctor_recompiles_total"] == summary["recompiles"]
    assert scraped["pt2doctor_recompiles_after_warmup_total"] == 2
    assert scraped["pt2doctor_graph_break_sites_total"] == summary["break_sites"]
    written = _series(prom.read_text())
    assert written["pt2doctor_compiles_total"] == summary["compiles"]
    assert not list(tmp_path.glob("live.prom.*"))  # written through a temporary file, renamed


def test_bad_follow_and_metrics_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --follow path that does not exist, an unknown --fail-on event, a busy metrics port
    (report --follow and run, before the program starts: no run directory is left): one line
    and exit 2 each. A directory with no trace yet is waited on, and said so once."""
    import socket

    from pt2doctor.cli import main

    assert main(["report", "--follow", str(tmp_path / "missing")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["report", "--follow", str(tmp_path), "--fail-on", "recompiled"]) == 2
    assert "recompiled" in capsys.readouterr().err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        assert main(["report", "--follow", str(tmp_path), "--metrics-port", port]) == 2
        err = capsys.readouterr().err
        assert f"cannot serve metrics on port {port}" in err and len(err.splitlines()) == 1
        out = tmp_path / "run"
        code = main(["run", "--out", str(out), "--metrics-port", port, "--", sys.executable,
                     "-c", "print('ran')"])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2 and f"cannot serve metrics on port {port}" in err and not out.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    try:
        assert main(["report", "--follow", str(empty), "--until-exit", str(sleeper.pid)]) == 0
    finally:
        sleeper.wait(timeout=30)
    err = capsys.readouterr().err
    assert err.count(f"waiting for a trace log in {empty}") == 1


def test_run_nproc_flags_a_rank_compiling_alone_before_a_barrier(doctor_run: Any) -> None:
    """run_ranks_skew.py under ``run --nproc 2 --live --skew-warn 2``: rank 1 alone compiles
    ``extra`` through a 10 s backend while rank 0 waits at the barrier. The skew is said live
    (while the compile had run less than its 10 s), with the frame, the phase, the waiting rank
    and the fix; once."""
    import re

    done = doctor_run("live_rank_skew", ["--nproc", "2", "--live", "--skew-warn", "2"],
                      "run_ranks_skew")  # fmt: skip
    assert done.returncode == 0, done.stderr
    [skew] = [line for line in done.stderr.splitlines() if " compiling extra (" in line]
    assert "rank 1 compiling extra (run/run_ranks_skew.py:" in skew
    assert "(backend compile); rank 0 waiting since" in skew
    assert "warm the compile cache on every rank or on none" in skew
    took = re.search(r"compiling extra \(.*?\) for (\d+) s", skew)
    assert took is not None and 2 <= int(took[1]) < 10
    assert "rank 1 past the barrier" in done.stdout


def test_follow_fails_on_the_late_recompile_of_a_job_it_did_not_start(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    """The same serving loop started on its own with TORCH_TRACE: ``report --follow
    --fail-on recompile-after-warmup --warmup 1`` exits 1 on the late request's recompile,
    while the job still waits to be released."""
    trace, release = tmp_path / "trace", tmp_path / "release"
    script = PROGRAMS / "run" / "run_serving_loop.py"
    job = subprocess.Popen([sys.executable, str(script), str(release)],
                           env={**run_env, "TORCH_TRACE": str(trace)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        done = subprocess.run([sys.executable, "-m", "pt2doctor", "report", "--follow",
                               str(trace), "--until-exit", str(job.pid), "--warmup", "1",
                               "--fail-on", "recompile-after-warmup"],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        still_waiting = job.poll() is None
    finally:
        release.touch()
        job.wait(timeout=120)
    assert done.returncode == 1, done.stderr
    assert still_waiting
    assert "recompile after warmup forward (" in done.stdout.splitlines()[-1]
    assert "tokens.shape[1] size 8 → 12 (now dynamic)" in done.stdout
    assert "--fail-on recompile-after-warmup: recompile after warmup forward (" in done.stderr


def _screen(raw: bytes) -> list[str]:
    """The lines a terminal shows for ``raw``: ``\\r\\n`` ends a line, ``\\r`` + erase-line
    (what the status line is erased with) or a bare ``\\r`` starts the line again."""
    text = raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r\x1b[K", "\r")
    lines = []
    for line in text.split("\n"):
        lines.append(line.rsplit("\r", 1)[-1])
    return lines


def _in_pty(
    command: list[str], env: dict[str, str], until: bytes, count: int, release: Path | None
) -> tuple[int, bytes]:
    """``command`` run in a real pty 200 columns wide; once its output holds ``until``
    ``count`` times (and two more polls of the follower have passed), ``release`` is
    touched. Returns its exit code and every byte the terminal received."""
    import fcntl
    import os
    import pty
    import struct
    import termios
    import threading
    import time

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    job = subprocess.Popen(command, env={**env, "COLUMNS": "200"}, stdin=slave, stdout=slave,
                           stderr=slave)  # fmt: skip
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while b"".join(chunks).count(until) < count and job.poll() is None:
            assert time.monotonic() < deadline, b"".join(chunks)
            time.sleep(0.1)
        time.sleep(1.2)  # two more polls: the status line counts what came
    finally:
        if release is not None:
            release.touch()
        job.wait(timeout=120)
        reader.join(timeout=10)
        os.close(master)
    return job.returncode, b"".join(chunks)


def test_run_live_at_a_terminal_keeps_a_status_line_below_the_program_s_output(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    """run_serving_loop.py under ``pt2doctor run`` in a real pty (live by default there): a
    status line with the elapsed time, the compiles and the recompiles after warmup is drawn
    while it runs and erased before each write; what the terminal shows at the end holds the
    program's lines and the event lines whole, and no status line."""
    import re

    release, out = tmp_path / "release", tmp_path / "run"
    script = PROGRAMS / "run" / "run_serving_loop.py"
    code, raw = _in_pty([sys.executable, "-m", "pt2doctor", "run", "--out", str(out),
                         "--steady-after", "1", "--backend", "eager", "--", sys.executable,
                         str(script), str(release)], run_env, b"recompile after warmup ", 2,
                        release)  # fmt: skip
    assert code == 0, raw
    assert b"\r\x1b[K" in raw
    statuses = re.findall(
        rb"pt2doctor \d+ s: (\d+) compiles, (\d+) recompiles \((\d+) after warmup\)", raw
    )
    assert (b"4", b"2", b"2") in statuses
    shown = _screen(raw)
    assert any(
        line.startswith("served ") and line.endswith(" batches of 8 tokens") for line in shown
    )
    assert "request of 12 tokens" in shown and "released" in shown
    late = [line for line in shown if " recompile after warmup " in line]
    assert len(late) == 2 and all(line.startswith("pt2doctor: ") for line in late)
    assert "tokens.shape[1] size 8 → 12 (now dynamic)" in late[0]
    assert not any(re.match(r"pt2doctor \d+ s: ", line) for line in shown)


def test_a_long_compile_of_an_unrolled_loop_shows_in_progress_with_its_phase(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    """run_unrolled.py (a 1500-step Python loop Dynamo unrolls: seconds of tracing) under
    ``pt2doctor run`` in a pty: while the compile runs, the status line names its frame, its
    phase and its seconds so far, the seconds growing."""
    import re

    script = PROGRAMS / "run" / "run_unrolled.py"
    code, raw = _in_pty([sys.executable, "-m", "pt2doctor", "run", "--out",
                         str(tmp_path / "run"), "--backend", "eager", "--", sys.executable,
                         str(script)], run_env, b"unrolled: done", 1, None)  # fmt: skip
    assert code == 0, raw
    running = re.findall(rb"; compiling step \(run/run_unrolled\.py:\d+\) \(([^)]+)\) (\d+) s", raw)
    assert running, raw
    assert {phase for phase, _ in running} <= {b"Dynamo tracing", b"backend compile", b"guards"}
    seconds = [int(took) for _, took in running]
    assert max(seconds) >= 1 and seconds == sorted(seconds)


def test_a_cache_miss_after_a_hit_of_the_same_log_is_a_warm_start_miss() -> None:
    """cache_hit_miss.log (tlparse's corpus: misses, then hits, then misses again): a miss
    after the log's first hit is a ``cache-miss`` event, once per compile, naming the cache;
    the misses before any hit (a cold start) are not. The oracle is the raw artifacts."""
    from pt2doctor.analysis.live import LiveState
    from pt2doctor.trace.tail import Tail

    log = CORPUS_DIR / "tlparse-inputs" / "inputs" / "cache_hit_miss.log"
    if not log.is_file():
        pytest.skip("no tlparse corpus here")
    hit, late_misses = False, set()
    for envelope, _ in raw_file_records(log):
        name = (envelope.get("artifact") or {}).get("name", "")
        hit = hit or name in ("fx_graph_cache_hit", "aotautograd_cache_hit")
        if hit and name in ("fx_graph_cache_miss", "aotautograd_cache_miss"):
            late_misses.add((envelope.get("frame_id"), envelope.get("frame_compile_id")))
    state = LiveState()
    events = [event for record in Tail(log).flush() for event in state.feed(record)]
    misses = [event for event in events if event.kind == "cache-miss"]
    assert late_misses and len(misses) == len(late_misses)
    assert all("cache miss on a warm start: " in e.text and "cache miss after " in e.text
               for e in misses)  # fmt: skip


def test_a_float_that_is_made_a_symbol_and_specialized_again_is_not_said_dynamic(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    """A dropout probability set every step (``m.p = p``): Dynamo makes the float a symbol,
    then specializes it again (the trace's symbolic_shape_specialization), so each recompile
    is on its value. The live lines never say "(now dynamic)", as the report's outlook does
    not ("never became dynamic"); the oracle is the raw trace's specialization records."""
    from pt2doctor.analysis.live import LiveState
    from pt2doctor.trace.tail import Tail

    program = tmp_path / "schedule.py"
    program.write_text(
        "import torch\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.0))\n"
        "compiled = torch.compile(model, backend='eager')\n"
        "for step in range(4):\n"
        "    model[1].p = step / 10\n"
        "    compiled(torch.randn(2, 4))\n"
    )
    trace = tmp_path / "trace"
    subprocess.run([sys.executable, str(program)], env={**run_env, "TORCH_TRACE": str(trace)},
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    specialized = [e for e, _ in raw_records(trace) if "symbolic_shape_specialization" in e]
    assert any("p" in str(e["symbolic_shape_specialization"].get("sources")) for e in specialized)
    state = LiveState(warmup_s=1000)
    lines = [e.text for r in Tail(trace).flush() for e in state.feed(r) if e.kind == "recompile"]
    assert lines and all("p value" in line for line in lines), lines
    assert not any("now dynamic" in line for line in lines), lines
