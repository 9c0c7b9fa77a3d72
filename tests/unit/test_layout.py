"""The layout holds: the import rules (no upward import, no shared layer importing a command
package) on the tree and on a planted violation, and docs/ARCHITECTURE.md's map names every
package and module of the tree (and nothing that is gone)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from import_rules import BASE_MODULES, COMMAND_PACKAGES, SHARED_LAYERS, module_cycles, violations

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "pt2doctor"
ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"


def test_the_tree_keeps_the_import_rules() -> None:
    assert violations(PACKAGE) == []


def test_every_top_level_name_has_a_place_in_the_rules() -> None:
    placed = {name for layer in SHARED_LAYERS for name in layer} | set(COMMAND_PACKAGES)
    placed |= set(BASE_MODULES)
    tree = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.parent.name for p in PACKAGE.glob("*/__init__.py")
    }
    assert tree - placed == set(), "add the new package to tests/import_rules.py"


@pytest.fixture
def copy_of_the_tree(tmp_path: Path) -> Path:
    copy = tmp_path / "pt2doctor"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.j2"))
    return copy


PLANTS = [
    # (file, line planted, what the checker must say)
    ("trace/reader.py", "from pt2doctor.analysis.recompiles import ledger", "trace imports upward"),
    ("analysis/breaks/heat.py", "from pt2doctor.report import schema", "analysis imports upward"),
    ("rundir/read.py", "    from pt2doctor.capture import probes", "rundir imports upward"),
    ("torchcompat/dynamo.py", "from pt2doctor import trace", "torchcompat imports upward"),
    ("workers.py", "from pt2doctor.cases.loader import load_cases", "imports a command package"),
    ("forkserver.py", "import pt2doctor.check.worker", "imports a command package"),
    ("report/views.py", "from pt2doctor.ablate import types", "imports a command package"),
]


@pytest.mark.parametrize(("file", "line", "said"), PLANTS, ids=[p[0] for p in PLANTS])
def test_a_planted_bad_import_is_caught(
    copy_of_the_tree: Path, file: str, line: str, said: str
) -> None:
    path = copy_of_the_tree / file
    body = path.read_text()
    if line.startswith(" "):  # a lazy import inside a function counts too
        line = "def _planted() -> None:\n" + line
    path.write_text(body + "\n\n" + line + "\n")
    found = violations(copy_of_the_tree)
    assert len(found) == 1 and found[0].startswith(file) and said in found[0], found


def _map_block() -> str:
    text = ARCHITECTURE.read_text()
    section = text.split("## The map", 1)[1]
    return section.split("```", 2)[1]


def test_the_map_fits_a_dozen_lines_or_so() -> None:
    assert len(_map_block().strip().splitlines()) <= 16


def test_the_architecture_map_names_every_package_and_module() -> None:
    block = _map_block()
    named = set(re.findall(r"([A-Za-z_][\w]*)/", block)) | set(
        re.findall(r"([A-Za-z_]\w*)\.py", block)
    )
    packages = {p.parent.name for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE}
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert (packages | modules) - named == set(), "docs/ARCHITECTURE.md's map misses these"
    files = {p.stem for p in PACKAGE.rglob("*.py")} | {
        p.name for p in PACKAGE.rglob("*") if p.is_dir()
    }
    assert named - files == set(), "the map names what the tree no longer has"


def test_no_two_modules_import_each_other() -> None:
    """No circle between modules, lazy imports included (the four the typed-model issue found:
    program_repro/script_repro, the diffs, frame_story/markdown, workers/forkserver)."""
    assert module_cycles(PACKAGE) == []


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pt2doctor"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pt2doctor.b import g\n")
    (package / "b.py").write_text("from pt2doctor.a import f\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pt2doctor.a import f\n"
    )
    assert module_cycles(package) == [["pt2doctor.a", "pt2doctor.b"]]
