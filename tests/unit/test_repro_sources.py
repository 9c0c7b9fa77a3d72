"""The repro's local sources: modules the case file imported from its own folder are copied
beside the repro; modules whose ``__file__`` is not a real path (torch.ops: ``_ops.py``,
relative) are not, even when the working directory is the case file's folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from pt2doctor.ablate.repro import copy_local_sources


def test_local_modules_are_copied_and_relative_module_files_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not Path(torch.ops.__file__).is_absolute()  # what made the stage crash
    case_dir, out = tmp_path / "models", tmp_path / "repro"
    (case_dir / "zoo").mkdir(parents=True)
    (case_dir / "zoo" / "__init__.py").write_text("")
    (case_dir / "zoo" / "nets.py").write_text("WIDTH = 3\n")
    case_file = case_dir / "cases.py"
    case_file.write_text("from zoo.nets import WIDTH\n")
    out.mkdir()
    monkeypatch.chdir(case_dir)  # torch.ops' "_ops.py" would resolve here
    monkeypatch.syspath_prepend(str(case_dir))
    import zoo.nets  # noqa: F401  the case file's own import

    try:
        copied = copy_local_sources(case_file, out)
    finally:
        for name in ("zoo", "zoo.nets"):
            sys.modules.pop(name, None)
    assert copied == ["zoo/__init__.py", "zoo/nets.py"]
    assert (out / "zoo" / "nets.py").read_text() == "WIDTH = 3\n"
