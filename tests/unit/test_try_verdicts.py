"""How a try is judged (analysis/findings/verdicts.py): the counts decide, after the two
things no count can excuse, a failed re-run and results that changed."""

from __future__ import annotations

from pt2doctor.analysis.findings.verdicts import Outcome, printed_change, printed_values, verdict

BEFORE = Outcome(compiles=9, recompiles=8, limit_hits=1, graph_breaks=2, wall_s=3.0, exit_code=0)
FEWER = Outcome(compiles=2, recompiles=1, limit_hits=0, graph_breaks=0, wall_s=2.0, exit_code=0)


def test_a_try_that_changed_the_results_is_unsafe_however_much_it_helped() -> None:
    assert verdict(BEFORE, FEWER) == "helped"
    assert (
        verdict(BEFORE, FEWER, "line 3 printed 'result: 2' with the fix, 'result: 1'") == "unsafe"
    )
    failed = Outcome(2, 1, 0, 0, 1.0, 1)
    assert verdict(BEFORE, failed, "anything") == "worse"  # a failed re-run is worse first


def test_timings_are_not_results_and_a_result_off_by_more_than_1e3_is() -> None:
    before = "epoch 1 loss 0.5000 took 12.1 ms\nstep time: 3.2\nresult: 1.2345\n"
    after = "epoch 1 loss 0.5000 took 99.0 ms\nstep time: 8.9\nresult: 1.2346\n"
    assert printed_change(before, after) is None  # within 1e-3, timings left out
    moved = printed_change(before, after.replace("1.2346", "1.2500"))
    assert moved is not None and "result: 1.2500" in moved
    assert [value for _, _, value in printed_values("batch 3 top class 5\n")] == [3.0, 5.0]
    assert "3 numbers with the fix, 2 without" in (
        printed_change("a 1\nb 2\n", "a 1\nb 2\nc 3\n") or ""
    )


def test_a_try_helped_only_when_its_finding_is_gone_and_counts_alone_are_partly() -> None:
    assert verdict(BEFORE, FEWER, remains=True) == "partly"  # 9 -> 2 compiles, still there
    assert verdict(BEFORE, FEWER, remains=False) == "helped"
    same = Outcome(9, 8, 1, 2, 3.0, 0)
    assert verdict(BEFORE, same, remains=False) == "helped"  # gone, whatever the counts
    assert verdict(BEFORE, same, remains=True) == "no_effect"
    worse = Outcome(12, 11, 2, 3, 3.0, 0)
    assert verdict(BEFORE, worse, remains=False) == "worse"
