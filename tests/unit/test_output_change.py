"""A try's results against the main run's (analysis/findings/verdicts.py ``output_change``),
on the digests two runs of tests/programs/real/llama_finetune_eval.py recorded in CI
(2026-12-07): an unseeded program whose layers' hidden states differ between the runs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pt2doctor.analysis.findings.verdicts import output_change

SITE = "llama_finetune_eval.py:21#3"
ROPE = [[[1, 16, 16], 175.8341052159667, 219.85786771401763],
        [[1, 16, 16], 39.42508652189281, 70.69837077090051], [[1, 16], 120.0, 120.0], 1.0]  # fmt: skip


def _run(hidden: list[Any], out: list[Any]) -> Any:
    event = {"site": SITE, "call": 5, "inputs": [hidden, *ROPE], "values": [out], "state": None}
    return SimpleNamespace(probes=SimpleNamespace(output_digests=[event]))


def test_hidden_states_that_differ_by_a_thousandth_are_other_inputs_not_a_change() -> None:
    """Layer 3's fifth call: its hidden states' absolute sums 18.813 and 18.800 (within the
    results' 1e-3, by chance): other inputs, so its other output is not the fix's doing."""
    main = _run([[2, 16, 32], -1.9860753854900395, 18.813167291211357],
                [[2, 16, 32], -2.3682114767143503, 19.72891678236192])  # fmt: skip
    tried = _run([[2, 16, 32], -1.999852184249903, 18.79952935159963],
                 [[2, 16, 32], -0.4793384746881202, 20.55660598783288])  # fmt: skip
    assert output_change(main, tried) is None


def test_the_same_inputs_and_another_output_is_a_change() -> None:
    hidden = [[2, 16, 32], -1.9860753854900395, 18.813167291211357]
    main = _run(hidden, [[2, 16, 32], -2.3682114767143503, 19.72891678236192])
    tried = _run(hidden, [[2, 16, 32], -0.4793384746881202, 20.55660598783288])
    said = output_change(main, tried)
    assert said is not None and said.startswith(f"the compiled code at {SITE[:-2]} returned")
    assert "on call 5 (output 0)" in said
