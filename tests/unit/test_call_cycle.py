"""The profile window's cycle of graph calls (capture/profile.py CallCycle): its period and
how often each graph is called in one turn, on call orders with a known period."""

from __future__ import annotations

from pt2doctor.capture.profile import CYCLE_WAIT, CallCycle


def _cycle(order: str) -> CallCycle:
    cycle = CallCycle()
    for graph in order:
        cycle.add(graph)
    return cycle


def test_one_graph_repeats_at_its_second_call() -> None:
    assert not _cycle("A").repeats()
    cycle = _cycle("AA")
    assert cycle.repeats() and cycle.period == 1 and cycle.per_turn("A") == 1


def test_a_layer_graph_called_three_times_a_step_is_not_once_a_turn() -> None:
    """A model Dynamo skipped calls one layer's graph for layers 0, 1 and 3, and layer 2's
    two graphs (split at a break) between: the step is 5 calls, A three times in it."""
    step = "AABCA"
    assert not _cycle(step + "AAB").repeats()  # not yet through two turns
    cycle = _cycle("CA" + step * 2)
    assert cycle.repeats() and cycle.period == 5
    assert cycle.per_turn("A") == 3 and cycle.per_turn("B") == 1 and cycle.once_a_turn()


def test_a_break_in_the_period_moves_it_to_the_next_that_holds() -> None:
    cycle = _cycle("AAAAA")
    assert cycle.period == 1
    cycle.add("H")  # a head graph after the layers: the period is the whole order so far
    assert cycle.period == 6 and not cycle.repeats()
    for graph in "AAAAAH":
        cycle.add(graph)
    assert cycle.repeats() and cycle.period == 6 and cycle.per_turn("A") == 5


def test_no_graph_once_a_turn() -> None:
    cycle = _cycle("AABB" * 2)
    assert cycle.period == 4 and not cycle.once_a_turn() and cycle.per_turn("A") == 2


def test_calls_that_never_repeat_stop_being_kept_at_the_wait() -> None:
    cycle = CallCycle()
    for n in range(CYCLE_WAIT + 10):
        cycle.add("P" if n in (0, 3, 10, 30, 100) else "D")
    assert cycle.waited() and len(cycle.order) == CYCLE_WAIT
    cycle.reset()
    assert not cycle.waited() and not cycle.repeats()
