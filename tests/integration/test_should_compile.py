"""``pt2doctor.should_compile``: aten-op sequences of real eager runs, compared across inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracles import marker_in

torch = pytest.importorskip("torch")

import pt2doctor  # noqa: E402

pytestmark = pytest.mark.torch_run


def branchy(x):
    if x.sum() > 0:
        return x.sin()  # MARK:sin
    return x.cos()


def summed(xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x  # MARK:loop
    return total


def test_a_stable_model_is_a_good_candidate() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    result = pt2doctor.should_compile(model, [torch.randn(2, 4), torch.randn(5, 4)])
    assert result.verdict == "good_candidate"
    assert result.op_counts[0] == result.op_counts[1] > 0
    assert (result.divergence, result.likely_cause, result.advice) == (None, None, None)
    assert result.samples == 2


def test_data_dependent_branching_diverges_at_its_line() -> None:
    result = pt2doctor.should_compile(branchy, [torch.ones(3), -torch.ones(3)])
    assert result.verdict == "diverges"
    assert result.divergence is not None
    assert result.divergence["ops"] == ["aten.sin.default", "aten.cos.default"]
    assert result.divergence["site"] == f"{__file__}:{marker_in(Path(__file__), 'sin')}"
    # Both inputs run the same ops up to the branch, which is the last op either way.
    count = result.op_counts[0]
    assert result.op_counts == [count, count]
    assert (result.divergence["sample"], result.divergence["step"]) == (1, count - 1)
    step = result.divergence["step"]
    assert f"at step {step} (aten.sin.default vs aten.cos.default)" in (result.likely_cause or "")
    assert "control flow" in (result.likely_cause or "")
    # The advice is the remedy for a branch: keep the decision out of the compiled region.
    assert "Python decisions outside it" in (result.advice or "")


def test_a_python_list_of_varying_length_diverges_in_length() -> None:
    short, long = ([torch.ones(2)] * 2,), ([torch.ones(2)] * 4,)
    result = pt2doctor.should_compile(summed, [short, long])
    assert result.verdict == "diverges"
    assert result.op_counts == [1, 3]
    assert result.divergence is not None
    assert result.divergence["site"] == f"{__file__}:{marker_in(Path(__file__), 'loop')}"
    assert result.divergence["step"] == 1  # the longer list's second add
    assert result.divergence["ops"] == ["<end>", "aten.add.Tensor"]
    assert "different lengths (1 vs 3)" in (result.likely_cause or "")
    assert "pack variable-length Python data into tensors" in (result.advice or "")


def test_one_sample_is_a_usage_error() -> None:
    with pytest.raises(pt2doctor.errors.UsageError):
        pt2doctor.should_compile(branchy, [torch.ones(3)])
