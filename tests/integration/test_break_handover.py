"""The code after a graph break, compiled per batch size, on a real (eager-backend) run of
tests/programs/run/run_pooling_break.py with twelve batches of nine sizes: the frame Dynamo
compiles after ``lengths.tolist()`` recompiles on what the break hands it (``h``, ``rows``)
until the recompile limit. No mark in the user's code reaches those values, so the fix is the
break's: the limit and the recompiles are filed under it, and no fix marks ``h``, a local the
user never passes. ``lengths.shape[0]``, specialized only in an analysis Dynamo restarted at
the break, is dynamic in the compile it kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracles import doctor_report, marker_in

pytestmark = pytest.mark.torch_run

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "run" / "run_pooling_break.py"
BATCHES = "1,2,3,4,6,8,5,7,9,10,2,3"


def test_what_a_break_hands_over_is_the_breaks_to_fix(tmp_path: Path) -> None:
    report = doctor_report(tmp_path / "run", PROGRAM, "--backend", "eager",
                           env={"PT2D_BATCHES": BATCHES})  # fmt: skip
    line = marker_in(PROGRAM, "break")
    (limit,) = [f for f in report["findings"] if f["code"] == "recompile_limit_hit"]
    (brk,) = [f for f in report["findings"] if f["code"] == "graph_break"]
    assert brk["cause"] == limit["cause"] == f"break {PROGRAM}:{line}"
    resumed = [f for f in report["findings"] if f["code"] == "recompiles"
               and "after its graph break" in f["title"]]  # fmt: skip
    assert resumed and all(f["cause"] == brk["cause"] for f in resumed)
    assert f"the graph break at line {line} hands to the code after it" in resumed[0]["advice"]
    for finding in report["findings"]:
        assert "maybe_mark_dynamic(h," not in finding["advice"], finding["advice"]
        assert "grows at every call" not in finding["advice"], finding["advice"]
    evidence = [e for f in report["findings"] for e in f["evidence"] if "lengths.shape[0]" in e]
    assert evidence and all("(now dynamic)" in e for e in evidence if " → " in e), evidence
    assert not any("made static" in f["title"] for f in report["findings"])
    # The break's own fix: a mask over the lengths, as run_pooling_break.py's PT2D_FIXED
    # applies it (tests/integration/test_diff_extent.py: the same checksum, no break).
    assert "keep = torch.arange(h.shape[1], device=h.device)[None, :] < lengths[:, None]" \
        in brk["advice"]  # fmt: skip
    assert "(h * keep[..., None]).sum(1) / lengths[:, None]" in brk["advice"]
    assert "bookkeeping" not in brk["advice"]


GAVE_UP = PROGRAM.with_name("run_gave_up.py")


def test_a_recompile_dynamo_gave_up_on_is_a_finding_at_the_line_it_could_not_trace(
    tmp_path: Path,
) -> None:
    """run_gave_up.py: the float an f-string formats goes dynamic on the recompile, and Dynamo
    gives up on it (BUILD_STRING). The run's one failure has its finding, at the f-string's
    line, with the fix; applied (PT2D_FIXED=1), no failure, no break, the same checksum."""
    report = doctor_report(tmp_path / "plain", GAVE_UP)
    assert report["summary"]["failures"] == 1
    (finding,) = [f for f in report["findings"] if f["code"] == "frame_skipped"]
    assert finding["severity"] == "warning" and finding["facts"]["partial"] is True
    assert "Dynamo gave up on that recompile" in finding["title"]
    assert (finding["subject"]["file"], finding["subject"]["line"]) == (
        str(GAVE_UP),
        marker_in(GAVE_UP, "log"),
    )
    assert any("BUILD_STRING" in line for line in finding["evidence"])
    assert "torch.compiler.is_compiling()" in finding["advice"]
    fixed = doctor_report(tmp_path / "fixed", GAVE_UP, env={"PT2D_FIXED": "1"})
    assert fixed["summary"]["failures"] == 0 and fixed["summary"]["graph_breaks"] == 0
    assert not [f for f in fixed["findings"] if f["code"] == "frame_skipped"]
    checksum = [(tmp_path / name / "stdout.log").read_text().splitlines()[-1]
                for name in ("plain", "fixed")]  # fmt: skip
    assert checksum[0].startswith("checksum: ") and checksum[0] == checksum[1]


BATCH_OF_ONE = PROGRAM.with_name("run_batch_of_one.py")


def test_a_batch_of_one_after_the_batch_went_dynamic_is_its_own_variant_by_design(
    tmp_path: Path,
) -> None:
    """run_batch_of_one.py: batches 4, 8, 1. The third variant's failed guard is
    ``2 <= x.size()[0]``: the batch was dynamic and a batch of 1 came. The report calls it a
    size change to 0 or 1, bounded: nothing to fix, warm it up; its alternative names the
    tensor the line passes, and here (code that never needs the batch as a number), applied
    as printed (PT2D_FIXED=1), one graph and the same checksum. It says to measure: on a
    blind-written BERT server the same mark compiled 11 graphs instead of 3."""
    report = doctor_report(tmp_path / "plain", BATCH_OF_ONE)
    (finding,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert finding["severity"] == "info"
    assert any("size dynamic → 0 or 1" in line for line in finding["evidence"])
    assert finding["advice"].startswith("Nothing to fix: ")  # bounded: warm it up
    assert "torch._dynamo.decorators.mark_unbacked(x, 0)" in finding["advice"]
    assert "measure before keeping it" in finding["advice"]  # it can compile more elsewhere
    plain = (tmp_path / "plain" / "stdout.log").read_text().splitlines()
    doctor_report(tmp_path / "fixed", BATCH_OF_ONE, env={"PT2D_FIXED": "1"})
    fixed = (tmp_path / "fixed" / "stdout.log").read_text().splitlines()
    assert plain[-2] == "graphs: 3" and fixed[-2] == "graphs: 1"
    assert plain[-1].startswith("checksum: ") and plain[-1] == fixed[-1]


MOE = PROGRAM.with_name("run_moe_empty_check.py")


def test_an_empty_selection_check_in_an_expert_loop_is_told_to_go(tmp_path: Path) -> None:
    """run_moe_empty_check.py: ``if token_idx.numel() == 0: continue`` on an unbacked size,
    inside the expert loop. Its records say "graph break in loop" first and "Data-dependent
    branching" under it: the site is the branch, not an unsupported builtin, and the fix is
    to drop the check (torch's "use torch.cond" left out); applied (PT2D_FIXED=1), one graph,
    no break, the same loss."""
    report = doctor_report(tmp_path / "plain", MOE)
    (site,) = report["graph_breaks"]
    assert site["site"]["line"] == marker_in(MOE, "check")
    assert site["gb_type"] == "Data-dependent branching"
    (finding,) = [f for f in report["findings"] if f["code"] == "graph_break"]
    assert "drop the check" in finding["advice"] and "torch.cond" not in finding["advice"]
    # The skipped frame, whose self the log never types, is named from the program's source.
    (skipped,) = [f for f in report["findings"] if f["code"] == "frame_skipped"]
    assert skipped["title"].startswith("MoE.forward (")
    fixed = doctor_report(tmp_path / "fixed", MOE, env={"PT2D_FIXED": "1"})
    assert fixed["summary"]["graph_breaks"] == 0 and fixed["summary"]["graphs"] == 1
    loss = [(tmp_path / name / "stdout.log").read_text().splitlines()[-1]
            for name in ("plain", "fixed")]  # fmt: skip
    assert loss[0].startswith("loss: ") and loss[0] == loss[1]
