"""A fallback op's finding (analysis/time/findings.py ``_fallback_ops``) where the op's line is
in a library's code (a transformers mask built inside the model): the advice says whose code
it is and not to edit it, and the saving is not the user's rewrite; in the user's own code the
rewrite is theirs."""

from __future__ import annotations

from pt2doctor.analysis.built.kernels import UserLine
from pt2doctor.analysis.time.findings import _fallback_ops
from pt2doctor.analysis.time.profile import KernelTime, ProfileView

LIBRARY = "/venv/lib/python3.11/site-packages/transformers/masking_utils.py"


def _finding(file: str) -> dict[str, str | None]:
    view = ProfileView(calls=10, wall_us=10_000.0, hot_compile_id="0/0")
    line = UserLine(file, 758, "causal_mask = torch.ones(...).tril()")
    view.kernels = [KernelTime("0/0", "forward", "torch.ops.aten.tril.default", "fallback",
                               us=3_000.0, launches=10, user_lines=(line,))]  # fmt: skip
    (found,) = _fallback_ops(view)
    return {"advice": found.advice, "saves": found.saves_unmeasured}


def test_an_op_in_library_code_is_said_to_be_the_library_s() -> None:
    found = _finding(LIBRARY)
    assert (
        "It is in the transformers package's code (transformers/masking_utils.py), not yours"
        in str(found["advice"])
    )
    assert "do not edit its source" in str(found["advice"])
    assert str(found["saves"]).startswith("a rewrite of the op is not yours to write")


def test_an_op_in_the_user_s_code_is_theirs_to_rewrite() -> None:
    found = _finding("/home/me/project/model.py")
    assert "not yours" not in str(found["advice"])
    assert str(found["saves"]).startswith("a rewrite of the op is yours to write: its 0.300 ms")
