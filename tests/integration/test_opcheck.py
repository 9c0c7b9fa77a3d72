"""``pt2doctor.opcheck`` on real custom ops: a correct one, and one whose fake registration
returns the wrong shape."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import pt2doctor  # noqa: E402

pytestmark = pytest.mark.torch_run


@torch.library.custom_op("pt2doctor_test::scale", mutates_args=())
def scale(x: torch.Tensor, k: float) -> torch.Tensor:
    return x * k


@scale.register_fake
def _scale_fake(x, k):
    return torch.empty_like(x)


def _scale_setup(ctx, inputs, output):
    ctx.k = inputs[1]


scale.register_autograd(lambda ctx, grad: (grad * ctx.k, None), setup_context=_scale_setup)


@torch.library.custom_op("pt2doctor_test::wrong_fake", mutates_args=())
def wrong_fake(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


@wrong_fake.register_fake
def _wrong_fake_fake(x):
    return x.new_empty(x.shape[0] + 1)  # wrong: the real op keeps the shape


@torch.library.custom_op("pt2doctor_test::median3", mutates_args=())
def median3(x: torch.Tensor) -> torch.Tensor:
    """A NumPy kernel with no fake registration at all (the sixth outside review's denoiser)."""
    import numpy as np

    values = x.detach().cpu().numpy()
    padded = np.pad(values, [(0, 0)] * (values.ndim - 1) + [(1, 1)], mode="edge")
    stacked = np.stack([padded[..., :-2], padded[..., 1:-1], padded[..., 2:]])
    return torch.from_numpy(np.median(stacked, axis=0).astype(values.dtype))


def test_an_op_without_a_fake_is_told_to_register_one_and_registering_it_compiles() -> None:
    """No register_fake at all: the fix names the op's own ``register_fake`` to add (not "make
    it return what the kernel returns": there is none to change), and no cache to clear (no
    compile could use the op). The truth: the op fails under torch.compile(fullgraph=True)
    as it is, and compiles and matches eager once a fake returning empty_like is added."""
    from pt2doctor.analysis.userside.causes import custom_op_verdict

    x = torch.randn(4, 1, 64)
    result = pt2doctor.opcheck(torch.ops.pt2doctor_test.median3.default, [x])
    checks = [{"name": c.name, "passed": c.passed, "message": c.message} for c in result.checks]
    verdict = custom_op_verdict([{"op": "pt2doctor_test.median3.default", "checks": checks,
                                  "inputs": ["Tensor[4, 1, 64] float32"]}])  # fmt: skip
    assert verdict is not None and verdict["test"] == "test_faketensor"
    assert "Give torch.ops.pt2doctor_test.median3.default a fake implementation: " in verdict["fix"]
    assert "`@median3.register_fake`" in verdict["fix"]
    assert "return what its kernel returns" not in verdict["fix"] and "cache" not in verdict["fix"]
    torch._dynamo.reset()
    with pytest.raises(Exception, match="fake"):
        torch.compile(lambda t: median3(t) + 1, backend="eager", fullgraph=True)(x)
    median3.register_fake(lambda t: torch.empty_like(t))
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: median3(t) + 1, backend="eager", fullgraph=True)
    assert torch.equal(compiled(x), median3(x) + 1)


def test_a_correct_op_passes_every_check() -> None:
    result = pt2doctor.opcheck(torch.ops.pt2doctor_test.scale.default, [(torch.randn(3, 4), 2.0)])
    assert result.passed, [(c.name, c.sample, c.message) for c in result.failures]
    names = {check.name for check in result.checks}
    assert {"test_schema", "test_faketensor", "eager_vs_compiled", "gradcheck"} <= names
    samples = {check.sample for check in result.checks}
    assert {"sample 0 (as given)", "sample 0 (float64)", "sample 0 (non-contiguous)"} <= samples
    (grad,) = [check for check in result.checks if check.name == "gradcheck"]
    assert grad.passed is True


def test_a_wrong_fake_kernel_fails_with_its_message() -> None:
    result = pt2doctor.opcheck(torch.ops.pt2doctor_test.wrong_fake.default, [torch.randn(3, 4)])
    assert not result.passed
    fake = [check for check in result.failures if check.name == "test_faketensor"]
    assert fake and all("FakeTensor" in check.message for check in fake)
    (grad,) = [check for check in result.checks if check.name == "gradcheck"]
    assert grad.passed is None  # no autograd registered: not applicable, not a failure


CASES = """
import torch

@torch.library.custom_op("pt2doctor_cli::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2

@double.register_fake
def _(x):
    return torch.empty_like(x)

@torch.library.custom_op("pt2doctor_cli::shrink", mutates_args=())
def shrink(x: torch.Tensor) -> torch.Tensor:
    return x.cos()

@shrink.register_fake
def _(x):
    return x.new_empty(1)

OPCHECK_CASES = [
    (torch.ops.pt2doctor_cli.double.default, [(torch.randn(2, 3),)]),
    (torch.ops.pt2doctor_cli.shrink.default, [(torch.randn(2, 3),)]),
]
"""


def test_cli_reports_each_op_and_fails_on_the_broken_one(tmp_path, capsys) -> None:
    from pt2doctor.cli import main

    cases = tmp_path / "cases.py"
    cases.write_text(CASES)
    assert main(["opcheck", str(cases)]) == 1
    out = capsys.readouterr().out
    assert "pt2doctor_cli.double.default: ok" in out, out[-3000:]
    assert "pt2doctor_cli.shrink.default: FAILED" in out


def test_cli_rejects_a_file_without_cases(tmp_path, capsys) -> None:
    from pt2doctor.cli import main

    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert main(["opcheck", str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pt2doctor: error:") and "OPCHECK_CASES" in err[0]


def test_cli_checks_the_ops_a_check_case_file_calls(capsys) -> None:
    """ablate's custom_op_fake.py (CASES, no OPCHECK_CASES): its eval cell calls
    pt2doctor_test.rms_score, whose fake returns the input's shape where the kernel drops the
    last dim. The op is checked on the inputs of that call, and only the fake fails."""
    from pathlib import Path

    from pt2doctor.cli import main

    case_file = Path(__file__).resolve().parents[1] / "programs" / "ablate" / "custom_op_fake.py"
    assert main(["opcheck", str(case_file)]) == 1
    out = capsys.readouterr().out
    assert "pt2doctor_test.rms_score.default: FAILED" in out, out[-3000:]
    failing = {line.split("│")[1].strip() for line in out.splitlines() if "FAIL " in line}
    assert failing == {"test_faketensor"}, out[-3000:]


@torch.library.custom_op("pt2doctor_test::scaled_by", mutates_args=())
def scaled_by(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x * weight


@scaled_by.register_fake
def _scaled_by_fake(x, weight):
    return torch.empty_like(x)


def test_inputs_recorded_under_no_grad_do_not_require_grad() -> None:
    """A parameter passed straight into a custom op (a norm's weight) in a cell without grad:
    its copy does not require grad, so opcheck does not fail the op for a backward nothing
    needs (the op has no autograd registration); in a cell with grad, it does."""
    from pt2doctor import torchcompat

    weight = torch.nn.Parameter(torch.ones(4))

    def call() -> None:
        torch.ops.pt2doctor_test.scaled_by(torch.randn(2, 4), weight)

    with torch.no_grad():
        ((_, (_, no_grad), _),) = torchcompat.record_custom_op_calls(call, grad=False).values()
    ((_, (_, with_grad), _),) = torchcompat.record_custom_op_calls(call, grad=True).values()
    assert (no_grad.requires_grad, with_grad.requires_grad) == (False, True)
    result = pt2doctor.opcheck(
        torch.ops.pt2doctor_test.scaled_by.default, [(torch.randn(2, 4), no_grad)]
    )
    assert result.passed, [(c.name, c.message[:200]) for c in result.failures]
