"""Startup: commands load lazily, ``report`` never imports torch, and a closed stdout is quiet.

Each import check runs the CLI in a fresh interpreter (a real subprocess) and reads back the
modules it ended with, since the test process itself has imported everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from pt2doctor.cli import COMMANDS, cli

CORPUS_LOG = (
    Path(__file__).resolve().parents[2]
    / ".."
    / "shared"
    / "corpus"
    / "tlparse-inputs"
    / "inputs"
    / "comp_metrics.log"
)
# Runs main(ARGV) and writes the names of the modules it imported to the file in argv[1].
_PROBE = """
import json, sys
from pt2doctor.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""
_COMMAND_MODULES = {f"pt2doctor.cli.{name}" for name in COMMANDS}


def _modules_after(tmp_path: Path, *argv: str) -> tuple[int, set[str]]:
    """(exit code, modules imported) of ``pt2doctor ARGV`` in a fresh interpreter."""
    result_file = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", _PROBE, str(result_file), *argv],
        check=True,
        capture_output=True,
        timeout=120,
    )
    result = json.loads(result_file.read_text())
    return result["code"], set(result["modules"])


def _heavy(modules: set[str]) -> set[str]:
    """torch and the packages of the commands that need it."""
    prefixes = ("torch", "pt2doctor.check", "pt2doctor.ablate", "pt2doctor.cases")
    return {name for name in modules if name.split(".")[0] == "torch" or name.startswith(prefixes)}


@pytest.mark.corpus
def test_report_on_a_log_imports_neither_torch_nor_check_nor_ablate(tmp_path: Path) -> None:
    if not CORPUS_LOG.is_file():
        pytest.skip(f"corpus log not found at {CORPUS_LOG}")
    report_file = tmp_path / "report.json"
    code, modules = _modules_after(
        tmp_path, "report", str(CORPUS_LOG), "--json", str(report_file), "--format", "json"
    )
    assert code == 0
    report = json.loads(report_file.read_text())
    stats = report["parse_stats"]  # the log was really read, and read clean
    assert (stats["files"], stats["problems"]) == (1, 0) and stats["records"] > 0
    assert "pt2doctor.trace.reader" in modules
    assert _heavy(modules) == set()
    assert modules & _COMMAND_MODULES == {"pt2doctor.cli.report"}


def test_help_listing_imports_no_command(tmp_path: Path) -> None:
    code, modules = _modules_after(tmp_path, "--help")
    assert code == 0
    assert modules & _COMMAND_MODULES == set()
    assert _heavy(modules) == set()


def test_report_help_imports_only_the_report_command(tmp_path: Path) -> None:
    code, modules = _modules_after(tmp_path, "report", "--help")
    assert code == 0
    assert modules & _COMMAND_MODULES == {"pt2doctor.cli.report"}
    assert _heavy(modules) == set()
    # Nor the reader, the analyses or the report's builder and types: help needs none of them.
    deferred = ("pt2doctor.trace", "pt2doctor.analysis", "pt2doctor.report")
    assert {name for name in modules if name.startswith(deferred)} == set()


def test_each_listed_summary_opens_its_command_help() -> None:
    """The listing's summaries are kept apart from the commands: they must not drift."""
    with click.Context(cli, info_name="pt2doctor") as ctx:
        listing = cli.get_help(ctx)
        for name, entry in COMMANDS.items():
            command = cli.get_command(ctx, name)
            assert command is not None and command.name == name
            help_text = " ".join((command.help or "").split())
            assert help_text.startswith(entry.summary.rstrip(".")), name
            assert f"  {name}" in listing and entry.summary in listing
    assert sorted(cli.list_commands(ctx)) == sorted(COMMANDS)


def _with_closed_stdout(*argv: str) -> subprocess.CompletedProcess[bytes]:
    """``pt2doctor ARGV`` with stdout a pipe whose reader is already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "pt2doctor", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write_end)


def test_usage_into_a_closed_pipe_exits_quietly() -> None:
    result = _with_closed_stdout()
    assert (result.returncode, result.stderr) == (1, b"")


@pytest.mark.corpus
def test_report_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    if not CORPUS_LOG.is_file():
        pytest.skip(f"corpus log not found at {CORPUS_LOG}")
    result = _with_closed_stdout(
        "report", str(CORPUS_LOG), "--json", str(tmp_path / "r.json"), "--format", "json"
    )
    assert (result.returncode, result.stderr) == (1, b"")
