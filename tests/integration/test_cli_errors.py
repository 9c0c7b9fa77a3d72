"""``pt2doctor report`` on bad and damaged input: one-line errors, exit codes, parse stats.

Bad input (nothing readable) exits 2 with exactly one ``pt2doctor: error:`` line on stderr and
no traceback. A damaged log (cut off, or a corrupted payload) is still reported up to the
damage, with the damage counted in ``parse_stats``: exit 0, or 1 with ``--strict``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pt2doctor.cli import main

# Tests that damage a real trace need the scenario program run under TORCH_TRACE first.
torch_run = pytest.mark.torch_run

# The scenario whose real trace is damaged below: two compiles (step and its resume function).
SOURCE_SCENARIO = "print_break"
_METRICS_ID = re.compile(rb'\{"compilation_metrics": \{"compile_id": "([^"]+)"')


def _missing(tmp: Path) -> Path:
    return tmp / "no-such-trace"


def _dir_without_logs(tmp: Path) -> Path:
    folder = tmp / "not-traces"
    folder.mkdir()
    (folder / "notes.txt").write_text("I0101 12:00:00.000000 1 x.py:1] not json\nhello\n")
    (folder / "empty.log").write_bytes(b"")
    return folder


def _binary(tmp: Path) -> Path:
    path = tmp / "model.bin"
    path.write_bytes(bytes(range(256)) * 8)
    return path


def _empty(tmp: Path) -> Path:
    path = tmp / "empty.log"
    path.write_bytes(b"")
    return path


BAD_INPUTS: dict[str, Callable[[Path], Path]] = {
    "missing_path": _missing,
    "dir_without_logs": _dir_without_logs,
    "binary_file": _binary,
    "empty_file": _empty,
}


def _assert_one_error_line(stderr: str, stdout: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("pt2doctor: error:"), stderr
    assert "Traceback" not in stderr + stdout


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_in_process(case: str, tmp_path: Path, monkeypatch, capsys) -> None:
    path = BAD_INPUTS[case](tmp_path)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert main(["report", str(path)]) == 2
    captured = capsys.readouterr()
    _assert_one_error_line(captured.err, captured.out)
    assert str(path.name) in captured.err
    assert not list(cwd.iterdir())  # no report.json for input that is not a trace


def test_bad_input_in_a_real_process(tmp_path: Path) -> None:
    """One case end to end through ``python -m pt2doctor`` (the exit code and the single line
    survive the real entry point); the in-process test above covers every case."""
    path = _binary(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pt2doctor", "report", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    _assert_one_error_line(done.stderr, done.stdout)


# --- damaged logs ------------------------------------------------------------------------------


def _the_log(traced) -> Path:
    (log,) = sorted(traced(SOURCE_SCENARIO).iterdir())
    return log


def _last_record_start(data: bytes) -> int:
    """Offset of the last envelope line (a line that is not tab-indented payload)."""
    starts = [m.end() for m in re.finditer(rb"\n(?!\t)", data[:-1])]
    return starts[-1]


def _report(path: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    rc = main(["report", str(path), "--json", str(out), "--format", "json", *extra])
    return rc, json.loads(out.read_text())


def _compile_ids(report: dict[str, Any]) -> list[str]:
    return sorted(entry["compile_id"] for entry in report["compiles"])


@torch_run
@pytest.mark.parametrize("where", ["envelope", "payload"])
def test_log_cut_in_its_last_record(where: str, traced, tmp_path: Path) -> None:
    data = _the_log(traced).read_bytes()
    start = _last_record_start(data)
    envelope_end = data.index(b"\n", start)
    assert envelope_end < len(data) - 1, "the last record should have a payload"
    cut = (start + envelope_end) // 2 if where == "envelope" else (envelope_end + len(data)) // 2
    damaged = tmp_path / "cut.log"
    damaged.write_bytes(data[:cut])
    intact_ids = sorted(m.decode() for m in _METRICS_ID.findall(data[:start]))
    assert len(intact_ids) == 2

    rc, report = _report(damaged, tmp_path / "r.json")
    assert rc == 0
    stats = report["parse_stats"]
    assert stats["truncated_records"] == 1
    assert stats["problems"] == 1
    assert _compile_ids(report) == intact_ids
    assert report["summary"]["break_sites"] == 1
    assert "parse_problems" in {finding["code"] for finding in report["findings"]}
    assert _report(damaged, tmp_path / "strict.json", "--strict")[0] == 1


@torch_run
def test_log_with_a_corrupted_payload_line(traced, tmp_path: Path) -> None:
    data = _the_log(traced).read_bytes()
    lines = data.split(b"\n")
    payload_rows = [i for i, line in enumerate(lines) if line.startswith(b"\t")]
    middle = payload_rows[len(payload_rows) // 2]
    lines[middle] = b"\t{corrupted: \x7f not what was hashed"
    damaged = tmp_path / "corrupt.log"
    damaged.write_bytes(b"\n".join(lines))
    every_id = sorted(m.decode() for m in _METRICS_ID.findall(data))

    rc, report = _report(damaged, tmp_path / "r.json")
    assert rc == 0
    stats = report["parse_stats"]
    assert stats["md5_mismatches"] == 1
    assert stats["problems"] == 1
    assert _compile_ids(report) == every_id  # records after the damage are read too
    assert _report(damaged, tmp_path / "strict.json", "--strict")[0] == 1


@torch_run
def test_strict_passes_an_intact_log(traced, tmp_path: Path) -> None:
    rc, report = _report(_the_log(traced), tmp_path / "r.json", "--strict")
    assert rc == 0
    assert report["parse_stats"]["problems"] == 0


# --- JSON on stdout ----------------------------------------------------------------------------


@torch_run
def test_json_dash_with_json_format_prints_only_json(traced, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(traced(SOURCE_SCENARIO)), "--json", "-", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["schema_version"] == 2
    assert not list(tmp_path.iterdir())  # '-' means stdout, not a file named '-'


@torch_run
def test_json_dash_prints_valid_json(traced, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(traced(SOURCE_SCENARIO)), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["schema_version"] == 2


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--nnodes", "2", "--", "train.py"],  # a torchrun option without --nproc
        ["run", "--nproc", "0", "--", "train.py"],
        ["run", "--nproc", "2", "--", sys.executable, "-u", "train.py"],
        ["run", "--nproc", "2", "--", "torchrun", "train.py"],
        ["run", "--collective-timeout", "0", "--", "train.py"],
        ["report", ".", "--collective-timeout", "-5"],
    ],
)
def test_bad_multi_rank_options(args: list[str], tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*args[:1], *(["--out", "out"] if args[0] == "run" else []), *args[1:]]) == 2
    captured = capsys.readouterr()
    _assert_one_error_line(captured.err, captured.out)
    assert not (tmp_path / "out").exists()  # nothing was started


def test_a_missing_program_and_a_script_that_is_not_executable_are_one_line_each(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """``python trian.py`` (a typo) and ``run -- exits3.py`` (a script without its interpreter,
    not executable) are told apart before anything starts: one line each, exit 2, no run
    directory."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "exits3.py"
    script.write_text("raise SystemExit(3)\n")
    for command, says in (
        ([sys.executable, "trian.py"], "no such file: trian.py"),
        (["./exits3.py"], "./exits3.py is not executable (a Python script: `pt2doctor run -- "
                          "python ./exits3.py`)"),
        (["./nowhere.py"], "no such file: ./nowhere.py"),
    ):  # fmt: skip
        assert main(["run", "--out", "out", "--", *command]) == 2
        captured = capsys.readouterr()
        _assert_one_error_line(captured.err, captured.out)
        assert says in captured.err
        assert not (tmp_path / "out").exists()
    # The same script made executable runs (its own exit code comes back).
    script.write_text("#!" + sys.executable + "\nraise SystemExit(3)\n")
    script.chmod(0o755)
    assert main(["run", "--out", "out", "--", "./exits3.py"]) == 3
    # It wrote no TORCH_TRACE log (it never imported torch): the headline says so, not "—".
    captured = capsys.readouterr()
    assert "pt2doctor report — no TORCH_TRACE log was written" in captured.err + captured.out


@torch_run
def test_a_run_without_out_names_its_run_directory_in_the_title(tmp_path: Path) -> None:
    """Without ``--out`` the run directory is made under ./pt2doctor-runs; the headline names
    it (it once read "pt2doctor report — " with nothing after the dash)."""
    program = tmp_path / "tiny.py"
    program.write_text(
        "import torch\n"
        "f = torch.compile(lambda x: x.sin() + 1, backend='eager')\n"
        "for _ in range(3):\n"
        "    f(torch.randn(4))\n"
    )
    done = subprocess.run([sys.executable, "-m", "pt2doctor", "run", "--", sys.executable,
                           str(program)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = (tmp_path / "pt2doctor-runs").iterdir()
    assert json.loads((run_dir / "report.json").read_text())["summary"]["compiles"] == 1
    headline = next(line for line in (done.stderr + done.stdout).splitlines()
                    if line.startswith("pt2doctor report — "))  # fmt: skip
    assert headline == f"pt2doctor report — pt2doctor-runs/{run_dir.name}"
