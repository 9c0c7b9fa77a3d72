"""``pt2doctor.compare_modules``: where compiled numbers leave eager's, found by compiling
modules alone on eager's recorded inputs. Each truth is established here independently: the
culprit compiled alone really differs from eager, and its siblings do not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "programs" / "numerics"))

import models  # noqa: E402

import pt2doctor  # noqa: E402


def _alone(module: torch.nn.Module, x: torch.Tensor, backend: object) -> torch.Tensor:
    torch.compiler.reset()
    with torch.no_grad():
        return torch.compile(module, backend=backend)(x)


def test_a_planted_relu_error_is_found_in_the_one_block_that_calls_relu() -> None:
    torch.manual_seed(0)
    model, x = models.Net().eval(), torch.randn(8, 16)
    found = pt2doctor.compare_modules(model, x, backend="relu_accuracy_error_TESTING_ONLY")
    assert found.diverges
    assert [step.name for step in found.path] == ["", "blocks.2", "blocks.2.ff", "blocks.2.ff.act"]
    assert found.culprit == "blocks.2.ff.act" and not found.fused
    lines = Path(models.__file__).read_text().splitlines()
    act_forward = (
        lines.index("class Act(nn.Module):")
        + 1
        + next(
            n
            for n, text in enumerate(lines[lines.index("class Act(nn.Module):") :])
            if "def forward" in text
        )
    )
    assert found.culprit_source == f"{models.__file__}:{act_forward}"
    # blocks 0 and 1 were compiled and passed; block 3 and the head never had to be.
    checked = {c.name: c.introduces for c in found.checked}
    assert checked["blocks.0"] is False and checked["blocks.1"] is False
    assert "blocks.3" not in checked and "head" not in checked
    # The truth, measured here: the culprit alone is off by the planted +1, its sibling is not.
    with torch.no_grad():
        h = model.blocks[2].ff.up(model.blocks[2].norm(x))
    act = model.blocks[2].ff.act
    assert torch.allclose(
        _alone(act, h, "relu_accuracy_error_TESTING_ONLY") - h, torch.ones_like(h)
    )
    assert torch.equal(_alone(model.blocks[1], x, "relu_accuracy_error_TESTING_ONLY"),
                       model.blocks[1](x).detach())  # fmt: skip
    # The whole compiled run, recorded per module: block 2 is where the outputs first differ.
    first = next(row["module"] for row in found.inherited if not row["passed"])
    assert first.startswith("blocks.2") and found.hooks_kept_failure is True
    assert "culprit: blocks.2.ff.act (Act)" in found.summary()


def test_an_error_only_when_two_modules_are_compiled_together_stops_at_their_parent() -> None:
    torch.manual_seed(0)
    model, x = models.GatedNet().eval(), torch.randn(8, 16)
    found = pt2doctor.compare_modules(model, x, backend=models.sigmoid_times_backend)
    assert found.culprit == "mix" and found.fused
    assert {c.name: c.introduces for c in found.checked if c.name.startswith("mix.")} == {
        "mix.gate": False, "mix.value": False,
    }  # fmt: skip
    assert "only when its children are compiled together" in found.summary()
    with torch.no_grad():
        h = model.inp(x)
    assert not torch.allclose(_alone(model.mix, h, models.sigmoid_times_backend), model.mix(h))


def test_a_model_compiled_right_has_nothing_to_localize() -> None:
    torch.manual_seed(0)
    found = pt2doctor.compare_modules(models.Net().eval(), torch.randn(8, 16), backend="eager")
    assert not found.diverges and found.culprit is None and not found.checked
    assert "nothing to localize" in found.summary()
