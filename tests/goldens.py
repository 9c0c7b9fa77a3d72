"""Golden files for the renderer tests (STYLE.md practice 8): compare a rendering with its
file under tests/golden, or rewrite the file under ``make golden`` (PT2DOCTOR_UPDATE_GOLDEN=1)
for review in the diff. Fixtures are real, normalized report.json files under tests/data."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("PT2DOCTOR_UPDATE_GOLDEN") == "1"


def fixture_names(data: Path) -> list[str]:
    return sorted(path.stem for path in data.glob("*.json"))


def load_fixture(data: Path, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((data / f"{name}.json").read_text())
    return loaded


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text)
        return
    assert path.is_file(), f"no golden file {path}: run `make golden` and review it"
    assert text == path.read_text(), f"{path.name} differs from its golden file (make golden)"


def view_json(view: Any) -> str:
    return json.dumps(view, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
