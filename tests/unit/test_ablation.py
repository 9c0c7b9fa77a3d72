"""Pure ablation analyses on hand-built outcomes: classification, the first failing layer,
module bisection over a toy tree, workarounds, and the repro's import stubs; and what a
repro's run said, on stand-in scripts run for real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pt2doctor.ablate.classify import (
    classify,
    conclusion,
    layer_of,
    same_failure,
    smallest_failing,
    workarounds,
)
from pt2doctor.ablate.driver import verify_repro
from pt2doctor.ablate.repro import stub_imports


def crash(*types: str, root: str = "RuntimeError") -> dict[str, Any]:
    return {"status": "crash", "error_types": list(types), "root_type": root}


def test_classification_by_exception_types() -> None:
    assert classify(crash("Unsupported", "TorchDynamoException")) == "incompleteness"
    assert classify(crash("GuardOnDataDependentSymNode", "RuntimeError")) == "user_side"
    assert classify(crash("BackendCompilerFailed", "RuntimeError")) == "compiler_bug"
    assert classify({"status": "diverged"}) == "compiler_bug"
    assert classify({"status": "ok"}) is None


def test_layers_and_first_failure() -> None:
    assert [layer_of(b, "inductor") for b in ("eager", "aot_eager", "inductor")] == [
        "dynamo",
        "aot",
        "inductor",
    ]
    assert layer_of("relu_compile_error_TESTING_ONLY", "relu_compile_error_TESTING_ONLY") == (
        "backend"
    )
    rungs = [
        {"backend": "eager", "layer": "dynamo", "status": "ok"},
        {"backend": "aot_eager", "layer": "aot", **crash("Unsupported")},
        {"backend": "inductor", "layer": "inductor", "status": "not run"},
    ]
    verdict = conclusion(rungs, "blocks.1", None)
    assert (verdict["layer"], verdict["category"], verdict["failure"]) == (
        "aot",
        "incompleteness",
        "crash",
    )
    assert "blocks.1" in verdict["sentence"]
    assert conclusion(rungs[:1], None, None)["layer"] is None
    # A command that exits 0 everywhere, without --accuracy-check: nothing compared its outputs.
    assert "matches eager" in conclusion(rungs[:1], None, None)["sentence"]
    unchecked = conclusion(rungs[:1], None, None, compared=False)["sentence"]
    assert "matches eager" not in unchecked and "--accuracy-check" in unchecked


def test_same_failure_needs_the_same_kind_and_crash_type() -> None:
    assert same_failure(crash(root="ValueError"), crash(root="ValueError"))
    assert not same_failure(crash(root="ValueError"), crash(root="KeyError"))
    assert not same_failure({"status": "diverged"}, crash())
    assert same_failure({"status": "diverged"}, {"status": "diverged"})


def test_smallest_failing_descends_into_the_first_failing_child() -> None:
    tree = {"": ["a", "b"], "a": ["a.x"], "b": ["b.x", "b.y"], "b.x": [], "b.y": [], "a.x": []}
    bad = {"b", "b.y"}
    found, tried = smallest_failing(lambda p: tree[p], lambda p: p in bad)
    assert found == "b.y"
    assert tried == [("a", False), ("b", True), ("b.x", False), ("b.y", True)]
    assert smallest_failing(lambda p: tree[p], lambda p: False) == (
        None,
        [("a", False), ("b", False)],
    )


def test_workarounds_put_a_toggle_that_fixed_it_first() -> None:
    toggles = [{"name": "dynamic=False", "status": "ok"}]
    found = workarounds("compiler_bug", toggles, "head", "aot_eager")
    assert found[0].startswith("Drop dynamic=True")
    assert any("'head'" in advice for advice in found)
    assert any("'aot_eager'" in advice for advice in found)
    assert workarounds(None, toggles, None, None) == []


def test_stub_imports_removes_pt2doctor() -> None:
    source = "import torch\nfrom pt2doctor.harness import (\n    Built,\n    Case as C,\n)\nx = 1\n"
    stubbed = stub_imports(source)
    assert "pt2doctor.harness" not in stubbed
    namespace: dict[str, Any] = {}
    exec(compile(stubbed.replace("import torch\n", ""), "<stub>", "exec"), namespace)
    assert namespace["Built"]() is None and namespace["C"]() is None and namespace["x"] == 1


@pytest.mark.parametrize(
    ("body", "code", "output"),
    [
        # tqdm-like progress on stderr comes last: the verdict line is what is kept.
        ("print('REPRODUCED: output 0 differs'); sys.stderr.write('Loading: 100%|#|\\n')", 1,
         "REPRODUCED: output 0 differs"),
        ("print('not reproduced: matches eager')", 0, "not reproduced: matches eager"),
        ("print('building'); raise ValueError('bad input')", 1, "ValueError: bad input"),
    ],
)  # fmt: skip
def test_verify_repro_keeps_what_the_repro_said(
    tmp_path: Path, body: str, code: int, output: str
) -> None:
    """A real run of a stand-in repro script (plain python, no torch)."""
    script = tmp_path / "repro.py"
    script.write_text(f"import sys\n{body}\nsys.exit({code})\n")
    verified = verify_repro(script, timeout=60, failure={"status": "diverged"})
    assert (verified["exit_code"], verified["output"]) == (code, output)
    assert verified["reproduces"] is (code == 1 and output.startswith("REPRODUCED"))


def test_verify_repro_of_a_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--out ab1`` gives ``ab1/repro/repro.py``; the repro runs in its own folder, where that
    relative path led to ``ab1/repro/ab1/repro/repro.py`` (exit 2, "does NOT reproduce")."""
    (tmp_path / "ab1" / "repro").mkdir(parents=True)
    script = tmp_path / "ab1" / "repro" / "repro.py"
    script.write_text("import sys\nprint('REPRODUCED: the compiled call raised ValueError: x')\n"
                      "sys.exit(1)\n")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    failure = {"status": "crash", "error": "ValueError: x"}
    verified = verify_repro(Path("ab1/repro/repro.py"), timeout=60, failure=failure)
    assert (verified["reproduces"], verified["exit_code"]) == (True, 1), verified


def test_the_ladder_shows_an_installed_packages_file_from_its_package() -> None:
    """The GPT-2 custom-op ablate's eager rung, as one_line wrote it."""
    from pt2doctor.ablate.views import ablate_ladder

    error = (
        "TorchRuntimeError: RuntimeError when making fake tensor call (at /work/main/.venv/lib/"
        "python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py:621 in forward: "
        "hidden_states = hidden_states.view(output_shape))"
    )
    row = {"backend": "eager", "layer": "dynamo", "status": "crash", "error": error}
    (shown,) = ablate_ladder({"ladder": [row]}).data["rows"]  # type: ignore[typeddict-item]
    assert "(at transformers/models/gpt2/modeling_gpt2.py:621 in forward:" in shown["error"]
