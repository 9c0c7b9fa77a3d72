"""``pt2doctor report --follow``: a job's TORCH_TRACE read while it runs (a job pt2doctor did
not start), one explained line per notable event, checked against the raw trace (oracles.py).

A real program runs in the background with TORCH_TRACE; the follower is its own process, as a
sidecar is. And a log grown by hand, in pieces cut mid-line, then truncated: each poll reads
only the new bytes and hands over whole records."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import CORPUS_DIR
from oracles import raw_records

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


def _series(text: str) -> dict[str, float]:
    """``name{labels} value`` lines of an OpenMetrics text, summed by metric name."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        metric = name.split("{", 1)[0]
        found[metric] = found.get(metric, 0.0) + float(value)
    return found


def test_the_events_are_metrics_in_a_textfile_and_on_a_port(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    """limit_hit.py followed with --metrics-textfile: the counters are the raw trace's; the
    same follower serving --metrics-port is scraped over HTTP while it waits for a job."""
    import socket
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
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
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
    import socket
    import time
    import urllib.request

    torch = pytest.importorskip("torch")
    import pt2doctor

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

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
    assert "rank 1 compiling forward (" in state.status(running.since + 40.0)
