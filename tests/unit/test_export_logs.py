"""Export logs of tlparse's corpus (``torch.export``, non-strict: no Dynamo frame): ``pt2doctor
report`` lists what tlparse --export shows, each checked against the log read here with
``json``: the guards export added with the user's line that added them, the expressions
data-dependent code decided by the real values, and the exported program."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import CORPUS_DIR
from oracles import raw_file_records

pytestmark = pytest.mark.corpus

INPUTS = CORPUS_DIR / "tlparse-inputs" / "inputs"
EXPORT_LOGS = ["export.log", "export_guard_added.log"]


def logged(log: Path, kind: str) -> list[tuple[str, int | None]]:
    """(expression, the line of the innermost user frame) of each ``kind`` record."""
    found = []
    for envelope, _ in raw_file_records(log):
        meta = envelope.get(kind)
        if isinstance(meta, dict):
            stack = meta.get("user_stack") or []
            found.append((meta["expr"], stack[-1]["line"] if stack else None))
    return found


def exported_program(log: Path) -> str:
    (text,) = [payload for envelope, payload in raw_file_records(log)
               if "exported_program" in envelope]  # fmt: skip
    return text


@pytest.mark.parametrize("name", EXPORT_LOGS)
def test_an_export_log_reports_its_guards_and_data_dependent_expressions(
    name: str, tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pt2doctor", "report", str(INPUTS / name), "--json", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    export: dict[str, Any] = json.loads(out.read_text())["export"]
    guards = logged(INPUTS / name, "guard_added")
    assert [g["expr"] for g in export["guards_added"]] == [expr for expr, _ in guards]
    with_user_stack = [(g, line) for g, (_, line) in zip(export["guards_added"], guards,
                                                         strict=True) if line]  # fmt: skip
    assert all(g["user_line"]["line"] == line for g, line in with_user_stack)
    decided = logged(INPUTS / name, "propagate_real_tensors_provenance")
    assert [(d["expr"], d["user_line"]["line"]) for d in export["data_dependent"]] == decided
    assert export["exported_program"] == exported_program(INPUTS / name)
    assert export["exported_program"].startswith("ExportedProgram:")
    assert f"{len(guards)} guard" in " ".join(done.stdout.split())


def test_a_guard_export_added_names_the_users_line_and_the_input(tmp_path: Path) -> None:
    """``assert a.shape[0] == 3`` in forward: export guards Eq(s0, 3) there, s0 being the
    first argument's first dim."""
    out = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "pt2doctor", "report",
                    str(INPUTS / "export_guard_added.log"), "--json", str(out)],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    (guard,) = json.loads(out.read_text())["export"]["guards_added"]
    assert guard["expr"] == "Eq(s0, 3)" and guard["user_line"]["code"] == "assert a.shape[0] == 3"
    assert guard["sources"] == {"s0": "args[0][0].shape[0]"}
