"""cases/forked.py: a function run in a forked child, its result or its exception back."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

from pt2doctor.cases.forked import IN_PROCESS_ENV, ChildFailed, can_fork, in_child

pytestmark = pytest.mark.skipif(not can_fork(), reason="no os.fork here")


def test_the_result_comes_back_from_another_process() -> None:
    pid, threads = in_child(lambda: (os.getpid(), __import__("torch").get_num_threads()))
    assert pid != os.getpid() and threads == 1


def test_an_exception_in_the_child_is_raised_here_as_itself() -> None:
    def fails() -> None:
        raise ValueError("raised in the child")

    with pytest.raises(ValueError, match="raised in the child"):
        in_child(fails)


def test_an_exception_that_does_not_pickle_comes_back_as_its_traceback() -> None:
    class Local(Exception):  # a local class: pickle cannot find it by name
        pass

    def fails() -> None:
        raise Local("no pickle")

    with pytest.raises(ChildFailed, match="no pickle"):
        in_child(fails)


def test_a_child_that_dies_says_so() -> None:
    with pytest.raises(ChildFailed, match="without a result"):
        in_child(lambda: os._exit(3))


def test_without_fork_it_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    assert in_child(os.getpid, fork=False) == os.getpid()
    monkeypatch.setenv(IN_PROCESS_ENV, "1")
    assert in_child(os.getpid) == os.getpid()


def test_a_child_that_never_answers_is_stopped() -> None:
    import time

    with pytest.raises(ChildFailed, match="no result in 1 s"):
        in_child(lambda: time.sleep(60), timeout=1)
