"""The compiled-against-eager verdict (analysis/time/paired.py): the sign test's p-value
checked against every win/loss pattern enumerated, and the verdict on pairs a busy machine
turned around."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pt2doctor.analysis.time.paired import compiled_vs_eager_findings, sign_test_p


def _enumerated_p(slower: int, pairs: int) -> float:
    """The same one-sided p by brute force: every win/loss pattern of the pairs, counted."""
    patterns = list(itertools.product((0, 1), repeat=pairs))
    return sum(1 for p in patterns if sum(p) >= slower) / len(patterns)


@given(st.integers(1, 14).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_exact_p_value_is_the_count_of_win_patterns(case: tuple[int, int]) -> None:
    slower, pairs = case
    assert sign_test_p(slower, pairs) == pytest.approx(_enumerated_p(slower, pairs))


def test_known_values() -> None:
    assert sign_test_p(10, 10) == 1 / 1024
    assert sign_test_p(15, 20) == pytest.approx(
        0.0207, abs=1e-4
    )  # the fewest of 20 that say slower
    assert sign_test_p(14, 20) > 0.05


def _event(compiled: list[float], eager: list[float]) -> dict[str, object]:
    return {"name": "Decoder", "file": "serve.py", "line": 9,
            "compiled_ms": compiled, "eager_ms": eager}  # fmt: skip


def test_slower_when_the_pairs_say_so_though_a_busy_machine_turned_some_around() -> None:
    """Twenty pairs, compiled ~30% slower, four pairs turned around by eager calls the
    machine preempted: those pairs are left out, and 16 of 16 say slower."""
    eager = [0.050 + 0.001 * (i % 3) for i in range(20)]
    compiled = [e * 1.3 for e in eager]
    for i in (3, 8, 12, 17):
        eager[i] = 0.2  # an eager call the machine preempted: that pair looks faster compiled
    (finding,) = compiled_vs_eager_findings([_event(compiled, eager)])
    assert finding.code == "compiled_slower_than_eager"
    assert finding.saves_ms == pytest.approx(
        finding.facts["compiled_ms"] - finding.facts["eager_ms"], abs=2e-6)  # fmt: skip


def test_no_finding_on_noise_or_on_a_difference_under_five_percent() -> None:
    eager = [0.050 + 0.004 * ((i * 7) % 5) for i in range(20)]
    shuffled = eager[5:] + eager[:5]  # the same calls, paired differently: no difference
    assert not compiled_vs_eager_findings([_event(shuffled, eager)])
    assert not compiled_vs_eager_findings([_event([e * 1.03 for e in eager], eager)])
    assert not compiled_vs_eager_findings([_event([0.2, 0.2], [0.1, 0.1])])  # too few pairs
