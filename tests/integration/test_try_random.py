"""A try that changes a program's printed results because compiled code draws random numbers
with Inductor's generator (tests/programs/run/run_random_counter.py, real Inductor runs):
``allow_unspec_int_on_nn_module`` removes the recompile-limit hit, so calls that ran eagerly
are compiled, and the checksum moves. The try says so, names the line that draws, and the
setting under which both draw the same numbers; the test proves that setting does (the
program's own checksum, with and without the fix), and that Dynamo's hint, which repeats the
tried setting, is not offered as the next step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from oracles import doctor_report, marker_in

pytestmark = pytest.mark.torch_run

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "run" / "run_random_counter.py"


def _checksum(run_env: dict[str, str], **env: str) -> str:
    done = subprocess.run([sys.executable, str(PROGRAM)], env={**run_env, **env}, text=True,
                          capture_output=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_try_that_moves_random_draws_into_compiled_code_says_so(
    tmp_path: Path, run_env: dict[str, str], vec_isa_trusted: None
) -> None:
    environ = {k: v for k, v in run_env.items() if not k.startswith("PT2D_")}
    report = doctor_report(tmp_path / "run", PROGRAM, "--try-fixes", "1")
    (limit,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    tried = limit["tried"]
    assert tried["verdict"] == "unsafe" and "allow_unspec_int_on_nn_module" in tried["fix"]
    line = marker_in(PROGRAM, "rand")
    assert f"its graphs draw random numbers ({PROGRAM.name}:{line}: `keep = (torch.rand(" \
        in tried["summary"]  # fmt: skip
    assert "compiles calls that ran eagerly before" in tried["summary"]
    assert "torch._inductor.config.fallback_random = True" in tried["summary"]
    assert "Next: Dynamo's hint" not in limit["advice"]
    # The claim, checked: under fallback_random the fix leaves the checksum as it was.
    plain, fixed = _checksum(environ), _checksum(environ, PT2D_FIX="1")
    assert plain.startswith("checksum: ") and plain != fixed
    same = {"PT2D_FALLBACK_RANDOM": "1"}
    assert _checksum(environ, **same) == _checksum(environ, PT2D_FIX="1", **same)


def test_a_try_that_changes_what_the_compiled_code_returns_is_unsafe_when_nothing_is_printed(
    tmp_path: Path, run_env: dict[str, str], vec_isa_trusted: None
) -> None:
    """The same program printing no number (``PT2D_SILENT=1``): the try is still unsafe,
    from what the compiled module returned on its calls past the old limit (digested in both
    runs). The truth is the checksum test above: the fix moves the results."""
    report = doctor_report(tmp_path / "run", PROGRAM, "--try-fixes", "1",
                           env={"PT2D_SILENT": "1"})  # fmt: skip
    (limit,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    tried = limit["tried"]
    assert tried["verdict"] == "unsafe" and "allow_unspec_int_on_nn_module" in tried["fix"]
    changed = tried["results_changed"]
    assert changed.startswith(f"the compiled code at {PROGRAM}:") and "other values" in changed
    call = int(changed.split(" on call ")[1].split()[0])
    assert call > 8  # a call the default recompile limit left eager before the fix
