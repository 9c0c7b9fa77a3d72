"""Bad case files, budgets and options: one line on stderr, exit 2, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest

from pt2doctor.cli import main

CHECK_DIR = Path(__file__).resolve().parents[1] / "programs" / "check"
CASES = str(CHECK_DIR / "variants_budget.py")


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("pt2doctor: error: "), err
    return err


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ("max_variant_per_frame = 2\n", "did you mean max_variants_per_frame"),
        ("cold_start_s = 'fast'\n", "cold_start_s must be float"),
        ("min_speedup = \n", "is not valid TOML"),
        ("allowed_breaks = [{site = 'a.py:3'}]\n", "needs exactly site and reason"),
    ],
)
def test_bad_budget_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], budget: str, message: str
) -> None:
    (tmp_path / "pt2doctor.toml").write_text(budget)
    out = tmp_path / "out"
    err = _error(
        capsys, ["check", CASES, "--budget", str(tmp_path / "pt2doctor.toml"), "--out", str(out)]
    )
    assert message in err and "pt2doctor.toml" in err
    assert not out.exists()


def test_budget_in_pyproject_next_to_the_case_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "cases.py"
    cases.write_text((CHECK_DIR / "variants_budget.py").read_text())
    (tmp_path / "pyproject.toml").write_text("[tool.pt2doctor]\nmin_speedupp = 1.0\n")
    err = _error(capsys, ["check", str(cases), "--out", str(tmp_path / "out")])
    assert "min_speedupp" in err and "did you mean min_speedup" in err


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("x = 1\n", "must define CASES"),
        ("raise RuntimeError('broken import')\n", "RuntimeError: broken import"),
        ("CASES = [1]\n", "CASES holds int, not a Case"),
        (
            "from pt2doctor.harness import Case, Matrix\n"
            "CASES = [Case('a', print, Matrix(shapes={'s': 1}, dtypes=('float8',)))]\n",
            "unknown dtype 'float8'",
        ),
    ],
)
def test_bad_case_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, message: str
) -> None:
    cases = tmp_path / "cases.py"
    cases.write_text(source)
    assert message in _error(capsys, ["check", str(cases), "--out", str(tmp_path / "out")])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--cells", "float64"], "no cell matches --cells float64; the cells are "),
        (["--modes", "fastest"], "unknown compile mode 'fastest'"),
        (["--backend", "eager", "--modes", "max-autotune"], "apply to the inductor backend only"),
        (["--backend", "tensorrtx"], "unknown backend 'tensorrtx'"),
        (["--expect-env", "/nonexistent/env.json"], "cannot read --expect-env"),
    ],
)
def test_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    argv = ["check", CASES, "--out", str(tmp_path / "out"), *flags]
    assert message in _error(capsys, argv)


def test_missing_case_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "no such case file" in _error(capsys, ["check", str(tmp_path / "nope.py")])


def test_existing_out_dir_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    assert "already exists" in _error(capsys, ["check", CASES, "--out", str(tmp_path / "out")])
