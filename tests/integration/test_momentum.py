"""A compiled optimizer step under OneCycleLR, which writes AdamW's ``betas`` anew at every
step (tests/programs/run/run_cycled_momentum.py, real Inductor runs): the step recompiles on
``betas[0]`` to the recompile limit. The fix names the scheduler's momentum cycle, not "pass it
as a tensor" (the scheduler puts a float tuple back); its two halves are checked: the step
outside the compiled function keeps the result and compiles nothing for it, and
``cycle_momentum=False`` removes the recompiles and changes the training, as the fix says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from oracles import doctor_report

pytestmark = pytest.mark.torch_run

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "run" / "run_cycled_momentum.py"


def _printed(run_env: dict[str, str], **env: str) -> tuple[int, float]:
    done = subprocess.run([sys.executable, str(PROGRAM)], env={**run_env, **env}, text=True,
                          capture_output=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    return int(lines["graphs"]), float(lines["checksum"])


def test_a_cycled_momentum_is_told_to_the_scheduler_not_made_a_tensor(
    tmp_path: Path, run_env: dict[str, str], vec_isa_trusted: None
) -> None:
    report = doctor_report(tmp_path / "run", PROGRAM)
    (finding,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert "self.param_groups[0]['betas'][0]" in finding["title"]
    assert "cycle_momentum=False" in finding["advice"]
    assert "changes the training" in finding["advice"]
    assert "Pass it as a tensor" not in finding["advice"]
    environ = {k: v for k, v in run_env.items() if not k.startswith("PT2D_")}
    graphs, plain = _printed(environ)
    eager_graphs, eager_step = _printed(environ, PT2D_EAGER_STEP="1")
    cycle_graphs, no_cycle = _printed(environ, PT2D_NO_CYCLE="1")
    assert graphs >= 8 and eager_graphs == 0 and cycle_graphs <= 2
    assert eager_step == pytest.approx(plain, rel=1e-4)  # the step outside: the same result
    assert no_cycle != pytest.approx(plain, rel=1e-4)  # no cycle: other training, as it says
