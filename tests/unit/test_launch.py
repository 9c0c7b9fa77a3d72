"""How ``run --nproc`` turns the user's command into a torchrun launch (pure argv building)."""

from __future__ import annotations

import sys

import pytest

from pt2doctor.capture.launch import Launch, launch_argv
from pt2doctor.errors import UsageError


def test_without_nproc_the_command_runs_as_given() -> None:
    command = ["python", "-u", "train.py", "--lr", "1"]
    assert launch_argv(command, None) == command


@pytest.mark.parametrize(
    "python", ["python", "python3.11", "/opt/venv/bin/python3", sys.executable]
)
def test_a_leading_python_launches_torchrun_with_that_interpreter(python: str) -> None:
    argv = launch_argv([python, "train.py", "--lr", "1"], Launch(nproc=4))
    assert argv[:3] == [python, "-m", "torch.distributed.run"]
    assert argv[3:] == ["--nproc-per-node=4", "--standalone", "train.py", "--lr", "1"]


def test_a_bare_script_uses_pt2doctors_interpreter() -> None:
    assert launch_argv(["train.py"], Launch(nproc=2))[0] == sys.executable


def test_a_module_is_passed_as_torchrun_module() -> None:
    argv = launch_argv(["python", "-m", "pkg.train", "x"], Launch(nproc=2))
    assert argv[-3:] == ["-m", "pkg.train", "x"]


def test_rendezvous_options_replace_standalone() -> None:
    options = ["--nnodes=2", "--node-rank=1", "--master_addr=10.0.0.1", "--master-port=29500"]
    argv = launch_argv(["train.py"], Launch(nproc=8, torchrun_options=options))
    assert "--standalone" not in argv
    assert argv[3:-1] == ["--nproc-per-node=8", *options]


@pytest.mark.parametrize(
    "command",
    [["python", "-u", "train.py"], ["torchrun", "train.py"], ["python"], ["python", "-m"]],
)
def test_commands_torchrun_cannot_start_are_usage_errors(command: list[str]) -> None:
    with pytest.raises(UsageError):
        launch_argv(command, Launch(nproc=2))
