"""Regenerate the check-report fixtures in tests/data/checks (inputs of the check renderers'
golden tests, tests/unit/test_check_golden.py).

Each fixture is the report.json of a real ``pt2doctor check`` (torch 2.13.0 CPU), normalized
like tests/data/make_reports.py does (repository root ``/repo``, Python ``/python``, the run
directory ``/tmp/check``), beside a copy of its raw steady-state samples (``<name>/groups/...``,
where the report's ``groups[].samples`` point inside the run directory). Run from the repository
root: ``.venv/bin/python tests/data/make_check_reports.py`` (~1 min on 2 CPU cores).

- ``check_budget``: tests/programs/check/variants_budget.py, ``--backend eager`` with cold starts,
  8 iterations, a budget of 1 variant per frame, 60 s cold start, 4096 MB, 1.1x speedup: two
  variants of ``forward`` (one clause fails), a recompile after warmup with its failed guard,
  noise warnings, cold starts empty vs warm cache, a speedup below budget (eager backend).
- ``check_accuracy``: tests/programs/check/planted_accuracy.py under torch's
  ``relu_accuracy_error_TESTING_ONLY`` backend (relu becomes x + 1): the relu cells fail.
- ``check_hostile``: tests/programs/check/hostile.py: case names, cell ids, an error message
  and a guarded string that are HTML and script (samples not copied: their directory names are
  the markup).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_reports import REPO, normalize

OUT = REPO / "tests" / "data" / "checks"
CHECKS = "tests/programs/check"
BUDGET = "max_variants_per_frame = 1\ncold_start_s = 60\npeak_memory_mb = 4096\nmin_speedup = 1.1\n"
RUNS = {
    "check_budget": [f"{CHECKS}/variants_budget.py", "--backend", "eager", "--iterations", "8"],
    "check_accuracy": [f"{CHECKS}/planted_accuracy.py", "--backend",
                       "relu_accuracy_error_TESTING_ONLY", "--no-cold-start", "--iterations", "6"],
    "check_hostile": [f"{CHECKS}/hostile.py", "--backend", "eager", "--no-cold-start",
                      "--iterations", "8"],
}  # fmt: skip


def _copy_samples(run_dir: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    for samples in sorted((run_dir / "groups").rglob("samples.jsonl")):
        copy = target / samples.relative_to(run_dir)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(samples, copy)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        budget = Path(tmp) / "pt2doctor.toml"
        budget.write_text(BUDGET)
        for name, args in RUNS.items():
            run_dir = Path(tmp) / name
            extra = ["--budget", str(budget)] if name == "check_budget" else []
            command = [sys.executable, "-m", "pt2doctor", "check", *args, "--out", str(run_dir)]
            done = subprocess.run([*command, *extra], cwd=REPO, capture_output=True, check=False)
            assert done.returncode in (0, 1), done.stderr.decode()[-3000:]
            text = normalize((run_dir / "report.json").read_text())
            text = text.replace(str(run_dir), "/tmp/check").replace(str(budget), "pt2doctor.toml")
            (OUT / f"{name}.json").write_text(text)
            if name != "check_hostile":
                _copy_samples(run_dir, OUT / name)
            print(f"wrote {OUT / name}.json")


if __name__ == "__main__":
    main()
