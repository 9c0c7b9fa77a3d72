"""Inductor's fusion log: recorded logs (tests/data/fusion, written by its
record_fusion_log.py with TORCH_LOGS=fusion) read back into the refused-fusion table, checked
against their raw lines; and the bounds of what ``run --kernels`` keeps of it."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from pt2doctor.analysis.built.fusion import UNINFORMATIVE, fusion_view
from pt2doctor.capture.fusion import MAX_REFUSALS, FusionLogKeeper
from pt2doctor.trace.fusion_log import parse_fusion_log

DATA = Path(__file__).resolve().parents[1] / "data" / "fusion"
RECORDED = sorted(DATA.glob("*.log"))
REFUSED = re.compile(r"\[(\S+)\] \[__fusion\] cannot fuse (\S+) with (\S+): (.*)$", re.M)
FUSING = re.compile(r"\[(\S+)\] \[__fusion\] fusing (\S+) with (\S+)$", re.M)
SCHEDULING = re.compile(r"\[__fusion\] ===== attempting fusion \(1/", re.M)


def _members(name: str) -> set[str]:
    return set(re.findall(r"op\d+", name))


def _apart_in_raw(text: str) -> list[tuple[str, str, str]]:
    """The raw log's refusals whose nodes never ended in one fused node, per scheduling (read
    from the raw lines with plain set unions, not with the code under test)."""
    found = []
    for block in SCHEDULING.split(text)[1:]:
        groups: list[set[str]] = []
        for _, a, b in FUSING.findall(block):
            joined = _members(a) | _members(b)
            touching = [g for g in groups if g & joined]
            for g in touching:
                groups.remove(g)
                joined |= g
            groups.append(joined)

        def group(name: str, groups: list[set[str]] = groups) -> set[str]:
            members = _members(name)
            return set().union(members, *(g for g in groups if g & members))

        found += [(a, b, why) for _, a, b, why in REFUSED.findall(block)
                  if not group(a) & group(b)]  # fmt: skip
    return found


@pytest.mark.parametrize("log", RECORDED, ids=[p.name for p in RECORDED])
def test_a_recorded_log_gives_the_refusals_that_left_nodes_apart(log: Path) -> None:
    text = log.read_text()
    parsed = parse_fusion_log(text.splitlines())
    assert set(parsed) == set(re.findall(r"\[(\d+/\d+)\] \[__fusion\]", text))
    raw_apart = _apart_in_raw(text)
    assert raw_apart, f"{log.name} has no refusal that left nodes apart: it proves nothing"
    listed = [
        r
        for s in parsed.values()
        for r in fusion_view(s, None, kept=True, cache_hit=False).rejected
    ]
    reasons = {why for _, _, why in raw_apart if why not in UNINFORMATIVE}
    assert {r.reason for r in listed} == reasons
    raw_lines = {f"cannot fuse {a} with {b}: {why}" for a, b, why in raw_apart}
    for refusal in listed:
        assert f"cannot fuse {refusal.a} with {refusal.b}: {refusal.reason}" in raw_lines
    assert sum(r.times for r in listed) == sum(why not in UNINFORMATIVE for *_, why in raw_apart)
    fused = sum(len(FUSING.findall(block)) for block in SCHEDULING.split(text)[1:])
    assert (
        sum(fusion_view(s, None, kept=True, cache_hit=False).fused for s in parsed.values())
        == fused
    )


def test_a_recorded_gpu_log_gives_triton_reasons() -> None:
    gpu = [log for log in RECORDED if log.name.startswith("cuda-")]
    if not gpu:
        pytest.skip("no GPU fusion log recorded: run tests/data/fusion/record_fusion_log.py on "
                    "a CUDA machine")  # fmt: skip
    for log in gpu:
        parsed = parse_fusion_log(log.read_text().splitlines())
        views = [fusion_view(s, None, kept=True, cache_hit=False) for s in parsed.values()]
        assert all(view.note is None for view in views)  # Triton logs its own refusals
        assert any(view.rejected for view in views)


def test_the_keeper_keeps_one_description_per_node_and_bounds_refusals() -> None:
    stream = io.StringIO()
    keeper = FusionLogKeeper(stream)
    node = "  SchedulerNode(name='op1'), Pointwise(['[8]', 'origins=OrderedSet([mul])'])"
    kept = [keeper.keep("0/0", m) for m in
            ("===== attempting fusion (1/10): 2 nodes =====", node, "fuse_nodes_once, candidates:",
             "===== attempting fusion (2/10): 2 nodes =====", node, "fusing op1 with op2",
             "  FusedSchedulerNode(nodes=op1_op2), snodes: [...]")]  # fmt: skip
    assert kept == [True, True, False, False, False, True, False]
    assert keeper.keep("0/1", node)  # another compile describes its nodes anew
    refusals = [keeper.keep("0/0", "cannot fuse op1 with op3: no shared data")
                for _ in range(MAX_REFUSALS + 5)]  # fmt: skip
    assert refusals.count(True) == MAX_REFUSALS
    assert keeper.keep("0/1", "cannot fuse op1 with op3: no shared data")


def test_the_keeper_stops_writing_at_its_size_limit() -> None:
    stream = io.StringIO()
    keeper = FusionLogKeeper(stream, max_bytes=100)
    for _ in range(10):
        keeper.write("x" * 30 + "\n")
    assert stream.getvalue().count("x" * 30) == 3
    assert stream.getvalue().endswith("[pt2doctor] fusion log truncated at its size limit\n")
