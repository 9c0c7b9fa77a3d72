"""``pt2doctor run --try-fixes``: each fix the report can apply itself is re-run with the fix
applied, in ``tries/<n>/``, and the finding says what it measured. The numbers are checked
against what the re-run program itself printed and warned (``graphs: N`` from Dynamo's
counters, the recompile-limit warning), not against pt2doctor's own reading of them.

The runs are the corpus runs of test_real_programs.py (shared, ``backend="eager"``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_blind_programs import EAGER, break_sites, compiles, line_of, result, run
from test_real_programs import REAL, _report, corpus_run, tried_graphs

from oracles import marker_in
from pt2doctor.analysis.findings.verdicts import CODE_CHANGE, CODE_FIXES_UNTRIED

pytestmark = pytest.mark.torch_run
PROGRAMS = Path(__file__).resolve().parents[1] / "programs" / "run"


def _finding(report: dict[str, Any], code: str) -> dict[str, Any]:
    (finding,) = [f for f in report["findings"] if f["code"] == code]
    return finding


def test_a_first_limit_that_is_too_low_is_said_to_do_nothing_and_the_next_one_helps(
    doctor_run: Any,
) -> None:
    """Six Llama layers compiled one by one, trained then evaluated: twelve variants (layers ×
    train/eval) against the default limit of 8. The log stops at the limit, so the states each
    layer serves are unknown: the first candidate (the states seen: 9) still hits the limit,
    and the report says so; the next (twice the states: 12) compiles every layer in both
    states, as the program's own counter and the missing limit warning show."""
    pytest.importorskip("transformers")
    run = corpus_run(doctor_run, "real_finetune_eval")
    report = _report(run)
    finding = _finding(report, "recompiles")
    first, second = finding["tries"]
    assert finding["tried"] == second
    limit = "torch._dynamo.config.recompile_limit"
    assert (first["fix"], first["verdict"]) == (f"{limit} = 9", "no_effect")
    assert (second["fix"], second["verdict"]) == (f"{limit} = 12", "helped")
    assert first["before"]["limit_hits"] == first["after"]["limit_hits"] == 1
    assert second["after"]["limit_hits"] == 0
    assert second["applied_as"] == f"{limit} = 12 set before the program ran"
    # The re-runs as the program saw them: the first still warned about the limit.
    graphs, stderr = tried_graphs(run, 1)
    assert graphs == 9 and "recompile_limit" in stderr
    graphs, stderr = tried_graphs(run, 2)
    assert graphs == 6 * 2 and "recompile_limit" not in stderr
    assert second["after"]["compiles"] == 12
    # The advice: the fix that did not help is not shown as the fix.
    advice = finding["advice"]
    assert advice.startswith(f"Tried {limit} = 12: helped (limit hits 1 → 0, ")
    assert f"Tried {limit} = 9 before it: no effect (limit hits 1 → 1, " in advice
    assert f"{limit} = 9)." not in advice  # the candidate's own sentence is gone
    (plan,) = [p for p in report["plan"] if p["step"] == "recompiles"]
    assert plan["tried"].startswith("tried recompile_limit = 12: helped, limit hits 1 → 0")
    index = json.loads((run.run_dir / "tries" / "index.json").read_text())
    assert [item["n"] for item in index] == [1, 2]  # a fix that helped ends the finding's tries
    manifest = json.loads((run.run_dir / "tries" / "2" / "manifest.json").read_text())
    assert manifest["try_fix"]["config"] == {limit: 12}


def test_dropping_the_users_dynamic_false_is_tried_and_helps(doctor_run: Any) -> None:
    """BERT compiled with ``dynamic=False`` over six batch sizes: the try gives every
    torch.compile call ``dynamic=None``; six graphs become two, as the program counted."""
    pytest.importorskip("transformers")
    run = corpus_run(doctor_run, "real_bert_static")
    finding = _finding(_report(run), "recompiles")
    tried = finding["tried"]
    assert (tried["fix"], tried["verdict"]) == ("torch.compile without dynamic=False", "helped")
    assert (tried["before"]["compiles"], tried["after"]["compiles"]) == (6, 2)
    assert tried["applied_as"] == "every torch.compile call given dynamic=None"
    assert finding["advice"].startswith("Tried torch.compile without dynamic=False: helped (")
    assert tried_graphs(run)[0] == 2
    # The re-run's compile call was the program's own, with the setting replaced.
    probes = (run.run_dir / "tries" / "1" / "probes.jsonl").read_text().splitlines()
    events = map(json.loads, probes)
    calls = [e for e in events if e["kind"] == "compile_call"]
    assert [c["settings"]["dynamic"] for c in calls] == [False]  # recorded as written
    assert str(REAL / "bert_dynamic_false.py") == calls[0]["file"]


def test_both_marks_of_a_shared_length_are_applied_at_each_call(doctor_run: Any) -> None:
    """``model(**batch)`` with dynamic padding: the try marks ``input_ids`` and
    ``attention_mask`` dim 1 before each of the four calls; two graphs become one."""
    pytest.importorskip("transformers")
    run = corpus_run(doctor_run, "real_bert_padding")
    tried = _finding(_report(run), "recompiles")["tried"]
    assert tried["verdict"] == "helped"
    assert (tried["before"]["recompiles"], tried["after"]["recompiles"]) == (1, 0)
    assert "input_ids dim 1: 4 calls, attention_mask dim 1: 4 calls" in tried["applied_as"]
    assert tried_graphs(run)[0] == 1


def test_a_program_with_nothing_to_apply_is_not_re_run(doctor_run: Any) -> None:
    """The rotary cache keyed by length: its fix is code (slice one table), so nothing is
    re-run (tries/index.json is empty), and the report says so, not only the terminal."""
    run = corpus_run(doctor_run, "real_rotary")
    report = _report(run)
    assert json.loads((run.run_dir / "tries" / "index.json").read_text()) == []
    assert [p.name for p in (run.run_dir / "tries").iterdir()] == ["index.json"]
    assert not any("tried" in f or "tryable" in f for f in report["findings"])
    assert "no fix in the report is one it can apply itself" in run.stderr
    said = "--try-fixes re-ran nothing: no fix in this report is one pt2doctor can apply"
    assert report["run"]["try_fixes"].startswith(said)
    assert said in (run.run_dir / "report.md").read_text()


def test_the_setting_that_would_silence_the_hooks_is_never_proposed(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    """Hooks attached for some batches, each storing ``.item()`` (run_hooks_item.py): torch's
    hint for the break is ``capture_scalar_outputs``, under which the hook is traced into the
    graph and the hooks attached later never run again. ``--try-fixes`` neither tries nor
    proposes it, the correctness finding leads the plan, and no try that changed what the
    program printed is shown as a fix. The truth, measured below: with the setting the bank
    is silently wrong; as written (the break kept) it is eager's."""
    run = doctor_run("try_hooks_item", ["--backend", "eager", "--try-fixes", "3"],
                     "run_hooks_item")  # fmt: skip
    report = _report(run)
    assert report["plan"][0]["code"] == "hook_changed_after_compile"
    texts = [str(item.get("advice") or "") for item in [*report["findings"],
                                                      *report["graph_breaks"]]]  # fmt: skip
    texts += [str(step.get("title") or "") for step in report["plan"]]
    script = PROGRAMS / "run_hooks_item.py"
    (row,) = [r for r in report["graph_breaks"] if r["site"]["line"] == marker_in(script, "item")]
    assert "return the tensor" in row["advice"]
    assert not [text for text in texts if "capture_scalar_outputs = True" in text]
    tries = [t for f in report["findings"] for t in f.get("tries") or ()]
    assert not [t for t in tries if "capture_scalar_outputs" in json.dumps(t["trial"])]
    program_out = (run.run_dir / "stdout.log").read_text()
    for attempt in tries:
        if attempt["verdict"] == "helped" and not attempt["trial"]["config"]:
            tried_out = (run.run_dir / attempt["run_dir"] / "stdout.log").read_text()
            assert result(tried_out) == result(program_out)

    def printed(**env: str) -> str:
        done = subprocess.run([sys.executable, str(script)], env={**run_env, **env},
                              capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
        return result(done.stdout)

    eager = printed(TORCHDYNAMO_DISABLE="1")
    assert result(program_out) == eager
    assert printed(TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS="1") != eager
    # The setting the correctness finding names is tried, with hooks guarded the finding is
    # gone, and the program's results are still eager's.
    (hooks,) = [f for f in report["findings"] if f["code"] == "hook_changed_after_compile"]
    (guarded,) = hooks["tries"]
    assert guarded["trial"]["config"] == {"torch._dynamo.config.skip_nnmodule_hook_guards": False}
    assert guarded["verdict"] == "helped" and guarded["finding_remains"] is False
    assert result((run.run_dir / guarded["run_dir"] / "stdout.log").read_text()) == eager
    assert hooks["advice"].startswith("Tried torch._dynamo.config.skip_nnmodule_hook_guards")
    assert "Register the hooks once" in hooks["advice"]  # the advice stays whole


def test_a_setting_the_break_advice_names_is_tried_and_judged_by_the_break_being_gone(
    doctor_run: Any,
) -> None:
    """The blind GNN reads its node count with ``int(edge_index.max()) + 1``: the break's
    advice names ``capture_scalar_outputs`` (the count only sizes tensors, no branch), and
    ``--try-fixes`` tries it. The truth is the re-run's own: no break left, fewer compiles
    (the TORCH_TRACE of tries/1), and the program printed the same result."""
    report, run_dir, out = run(doctor_run, "gnn_message_passing", *EAGER, "--try-fixes", "1")
    line = line_of("gnn_message_passing", "num_nodes = int(edge_index.max()) + 1")
    (site,) = [f for f in report["findings"] if f["code"] == "graph_break"]
    assert site["subject"]["line"] == line
    setting = "torch._dynamo.config.capture_scalar_outputs"
    (tried,) = site["tries"]
    assert tried["trial"]["config"] == {setting: True} and tried["run_dir"] == "tries/1"
    assert tried["verdict"] == "helped" and tried["finding_remains"] is False
    tried_dir = run_dir / "tries" / "1"
    assert break_sites(run_dir) >= 1 and break_sites(tried_dir) == 0
    assert compiles(tried_dir) < compiles(run_dir)
    assert result((tried_dir / "stdout.log").read_text()) == result(out)
    # The try is said before the advice, which stays whole (its shape fix first).
    assert site["advice"].startswith(f"Tried {setting} = True: helped (")
    assert "x.size(0)" in site["advice"]
    # A fix the budget of one re-run did not reach is a candidate, and says why.
    untried = [f for f in report["findings"] if f.get("tryable") and not f.get("tries")]
    assert untried and all(any(e.startswith("not tried: the --try-fixes budget (1 re-run)")
                               for e in f["evidence"]) for f in untried)  # fmt: skip
    # Every fix not re-run is named with its reason: the break's code fixes (pt2doctor never
    # edits the code), the others' settings (the budget went first).
    assert site["not_tried"] and {item["why"] for item in site["not_tried"]} == {CODE_CHANGE}
    assert [item["fix"] for item in site["not_tried"]] == [
        "the changes to the code its advice names"
    ]
    assert site["advice"].endswith(CODE_FIXES_UNTRIED)
    for finding in untried:
        names = {item["fix"] for item in finding["not_tried"] if "budget" in item["why"]}
        assert {fix["label"] for fix in finding["tryable"]} <= names


def test_an_unseeded_program_is_not_called_unsafe_and_a_break_that_moved_is_not_gone(
    doctor_run: Any,
) -> None:
    """TRUTH.md 72 (written blind): capture_scalar_outputs moves the ``.item()`` break to the
    ``if`` on its value, and the unseeded program prints other numbers on every run. The try
    is judged by both: the program run once more without a fix prints other numbers too, so
    they are not compared (was "unsafe: changed the program's results"), and the break that
    moved is not a break removed (was "the finding is gone"). The truth: the re-runs' own
    logs (a break at the ``if`` line in tries/1, other numbers in the run without a fix)."""
    report, run_dir, out = run(doctor_run, "clip_temps_step", *EAGER, "--try-fixes", "1")
    item = line_of("clip_temps_step", "norm = h.norm().item()")
    branch = line_of("clip_temps_step", "if norm > 10.0:")
    (site,) = [f for f in report["findings"] if f["code"] == "graph_break"]
    assert site["subject"]["line"] == item
    (tried,) = site["tries"]
    assert tried["verdict"] not in ("helped", "unsafe"), tried
    assert tried["moved_to"]["line"] == branch and tried["finding_remains"] is True
    assert tried["results_vary"] == ["printed"] and "results_changed" not in tried
    assert break_sites(run_dir / "tries" / "1") == 1
    index = json.loads((run_dir / "tries" / "index.json").read_text())
    (control,) = [item for item in index if item["trial"].get("control")]
    control_out = (run_dir / "tries" / str(control["n"]) / "stdout.log").read_text()
    done = [
        line for line in (control_out, out) for line in line.splitlines() if line.startswith("done")
    ]
    assert len(done) == 2 and done[0] != done[1]  # the program alone prints other numbers
    assert "capture_scalar_outputs = True` or `export" not in site["advice"]
    assert "torch.where" in site["advice"]
    # The list the step reads one item of: pass the item (TRUTH.md: 6 -> 4 compiles).
    (recompiles,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert "pass that item instead of the list (`torch.tensor(temps[-1])`" in recompiles["advice"]
