"""Cold-start analysis on Runs built by hand: phases, cache state, the warm-start estimate,
guard overhead and the key-component diff.

Timer values are those of a real torch 2.13.0+cpu trace of tests/programs/run/run_cold_start.py
(cold: compile 0/0 of ``mlp``, an empty TORCHINDUCTOR_CACHE_DIR; warm: the same program again in
that cache dir), so the arithmetic is checked on numbers torch really logs.
"""

from __future__ import annotations

import pytest

from pt2doctor.analysis.breaks.heat import CompileHeat, Heat
from pt2doctor.analysis.coldstart.cache_diff import differing_components
from pt2doctor.analysis.coldstart.explain import (
    LOAD_PER_GRAPH_S,
    cache_state,
    cold_start_phases,
    cold_start_section,
    warm_estimate,
)
from pt2doctor.analysis.coldstart.guard_overhead import guard_overhead_findings
from pt2doctor.analysis.recompiles.ledger import compile_ledger
from pt2doctor.trace.records import CompileId, ParseStats
from pt2doctor.trace.types import CacheEvent, CompileRecord, Run

STREAM = "dedicated_log_torch_trace_abc.log"
# compile 0/0 of the cold trace: total > backend > inductor > codegen; 14 compile_file events.
COLD_TIMINGS = {"total": 72.736444, "backend": 71.931833, "inductor": 67.254828,
                "codegen": 66.555278, "cpp_build": 58.569794, "triton_build": 2.585085}  # fmt: skip
# compile 0/0 of the warm trace: an AOTAutograd hit loads Inductor's output.
WARM_TIMINGS = {"total": 5.846789, "backend": 5.375994, "cache_load": 4.691312,
                "cpp_build": 0.421442, "triton_build": 0.000986}  # fmt: skip


def _record(frame: int, variant: int, timings: dict[str, float], status: str | None,
            **counters: float) -> CompileRecord:  # fmt: skip
    record = CompileRecord(CompileId(frame, variant), STREAM, function=f"f{frame}", line=frame)
    record.timings = dict(timings)
    record.compile_time_s = timings.get("total")
    record.has_guarded_code, record.graph_count = True, 1
    record.counters = dict(counters)
    if status is not None:
        record.cache_events = [CacheEvent("fx_graph", status, key=f"k{frame}{variant}"),
                               CacheEvent("aotautograd", status, key=f"a{frame}{variant}")]  # fmt: skip
    return record


def _ledger(*records: CompileRecord):  # type: ignore[no-untyped-def]
    return compile_ledger(Run(list(records), ParseStats(), [], [STREAM]))


def test_cold_phases_are_disjoint_and_sum_to_the_compile_time() -> None:
    (entry,) = _ledger(_record(0, 0, COLD_TIMINGS, "miss")).compiles
    phases = cold_start_phases(entry)
    assert list(phases) == ["dynamo_tracing", "aot_autograd", "inductor_lowering",
                            "inductor_codegen", "cpp_triton_build"]  # fmt: skip
    assert sum(phases.values()) == pytest.approx(COLD_TIMINGS["total"], abs=1e-5)
    assert phases["cpp_triton_build"] == pytest.approx(58.569794)


def test_a_hit_carves_the_load_and_nests_the_build_inside_it() -> None:
    (entry,) = _ledger(_record(0, 0, WARM_TIMINGS, "hit")).compiles
    phases = cold_start_phases(entry)
    assert "inductor_codegen" not in phases and "backend" not in phases
    assert phases["cache_load"] == pytest.approx(4.691312 - 0.421442, abs=1e-5)
    assert sum(phases.values()) == pytest.approx(WARM_TIMINGS["total"], abs=1e-5)


def test_autotuning_is_carved_out_of_lowering() -> None:
    record = _record(0, 0, COLD_TIMINGS, "miss", compile_time_autotune_time_us=500_000)
    phases = cold_start_phases(_ledger(record).compiles[0])
    assert phases["autotuning"] == pytest.approx(0.5)
    assert phases["inductor_lowering"] == pytest.approx(67.254828 - 66.555278 - 0.5, abs=1e-5)


@pytest.mark.parametrize(
    ("statuses", "state"),
    [(["miss", "miss"], "cold"), (["hit", "hit"], "warm"), (["hit", "miss"], "partial"),
     (["bypass", "bypass"], "bypassed"), ([None, None], "no_cache")],
)  # fmt: skip
def test_cache_state(statuses: list[str | None], state: str) -> None:
    ledger = _ledger(*(_record(i, 0, COLD_TIMINGS, s) for i, s in enumerate(statuses)))
    assert cache_state(ledger).state == state


def test_warm_estimate_keeps_tracing_and_one_start_up() -> None:
    ledger = _ledger(_record(0, 0, COLD_TIMINGS, "miss"), _record(1, 0, COLD_TIMINGS, "miss"))
    phases = cold_start_phases(ledger.compiles[0])
    expected = 2 * phases["dynamo_tracing"] + phases["aot_autograd"] + LOAD_PER_GRAPH_S
    assert warm_estimate(ledger) == pytest.approx(expected)


def test_a_compile_that_hit_costs_what_it_cost() -> None:
    ledger = _ledger(_record(0, 0, WARM_TIMINGS, "hit"), _record(1, 0, COLD_TIMINGS, "miss"))
    tracing = cold_start_phases(ledger.compiles[1])["dynamo_tracing"]
    assert warm_estimate(ledger) == pytest.approx(
        WARM_TIMINGS["total"] + tracing + LOAD_PER_GRAPH_S
    )


def test_verdict_names_the_state_the_share_and_the_largest_phase() -> None:
    section = cold_start_section(_ledger(_record(0, 0, COLD_TIMINGS, "miss")), wall_s=88.0)
    assert section["verdict"] == (
        "cold: every cache missed (an empty or new cache dir, or keys that changed); 72.7 s of 88 s compiling, "
        "81% C++/Triton build"
    )
    assert section["share"] == pytest.approx(72.736444 / 88.0, abs=1e-4)
    assert any("TORCHINDUCTOR_CACHE_DIR" in advice for advice in section["advice"])


def _heat(ledger, calls: int, seconds: float) -> Heat:  # type: ignore[no-untyped-def]
    return Heat(compiles={
        (STREAM, entry.compile_id): CompileHeat(calls=calls, seconds_in_graph=seconds)
        for entry in ledger.compiles
    })  # fmt: skip


def test_guard_overhead_needs_a_visible_share() -> None:
    variants = [_record(0, v, {"total": 0.1}, None, guard_latency_us=50.0) for v in range(8)]
    ledger = _ledger(*variants)
    # 8 variants x 400 calls x 50 us x (1 + 7/2) = 0.72 s of guards against 0.8 s in graphs.
    (finding,) = guard_overhead_findings(ledger, _heat(ledger, 400, 0.1))
    assert finding.code == "guard_overhead"
    assert "up to 720.0 ms" in finding.title and "90%" in finding.title
    assert finding.severity == "warning"  # 8 variants: the search itself is the cost
    # The same guards in front of graphs 100x slower: 0.9% of the time, not flagged.
    assert guard_overhead_findings(ledger, _heat(ledger, 400, 10.0)) == []


def test_guard_overhead_of_few_variants_is_information() -> None:
    """guard_latency_us is one evaluation after a cache flush and the variant that passed moves
    to the front: for two variants the bound is worth a look, not an alarm."""
    variants = [_record(0, v, {"total": 0.1}, None, guard_latency_us=50.0) for v in range(2)]
    ledger = _ledger(*variants)
    # 2 variants x 400 calls x 50 us x (1 + 1/2) = 60 ms of guards against 0.2 s in graphs.
    (finding,) = guard_overhead_findings(ledger, _heat(ledger, 400, 0.1))
    assert (finding.severity, "up to 60.0 ms" in finding.title) == ("info", True)


def test_guard_overhead_prefers_the_probes_warm_timing() -> None:
    """torch's guard_latency_us (cold, 581 us) against the probes' warm check (0.8 us) of the
    same variant: the estimate uses the warm one and says so."""
    ledger = _ledger(_record(0, 0, {"total": 0.1}, None, guard_latency_us=581.0))
    heat = _heat(ledger, 3200, 0.001)
    for item in heat.compiles.values():
        item.guard_check_us = 0.8
    (finding,) = guard_overhead_findings(ledger, heat)
    # 3200 calls x 0.8 us = 2.56 ms against 1 ms in the graph.
    assert "guard checks take about 2.6 ms, 256% of its 1.0 ms" in finding.title
    assert finding.evidence[0].startswith("one check per variant, timed warm")
    assert "0.8 us" in finding.evidence[0]


def test_guard_overhead_of_a_frame_called_a_few_times_is_not_flagged() -> None:
    """A one-variant function called 3 times, whose one cold guard evaluation took 581 us (as
    torch measured a lambda's single tensor guard on this machine): 1.7 ms of "guards" against
    1.7 ms in its graph is over both thresholds, and says nothing about the frame."""
    ledger = _ledger(_record(0, 0, {"total": 0.1}, None, guard_latency_us=581.0))
    assert guard_overhead_findings(ledger, _heat(ledger, 3, 0.0017)) == []
    # The same frame called 200 times (116 ms of bound against 0.11 s in its graph) is.
    (finding,) = guard_overhead_findings(ledger, _heat(ledger, 200, 0.11))
    assert "200 calls" in finding.title


def test_differing_components_name_changed_and_missing_ones() -> None:
    a = {"inductor_config[cpp.simdlen]": ["aaaa", "None"], "gm": ["g1", "def forward"],
         "torch_version": ["t1", "<bytes>"]}  # fmt: skip
    b = {"inductor_config[cpp.simdlen]": ["bbbb", "8"], "gm": ["g1", "def forward"],
         "torch_version": ["t2", "<bytes>"], "system_info[device]": ["d", "{'name': 'cpu'}"]}  # fmt: skip
    assert differing_components(a, b) == [
        {"name": "inductor_config[cpp.simdlen]", "a": "None", "b": "8"},
        {"name": "system_info[device]", "a": None, "b": "{'name': 'cpu'}"},
        {"name": "torch_version", "a": "<bytes> [t1]", "b": "<bytes> [t2]"},
    ]
