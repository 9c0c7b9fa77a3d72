"""Recompile explanations on real programs (tests/programs/recompiles and limit_hit.py): what
changed per recompile in the user's names, the variant table, the outlook, the severity and the
fix, each asserted against the program's raw TORCH_TRACE log and its ``# MARK:`` lines.

Expected values come from the programs (their constants and marks) and from a minimal reading of
the raw log (tests/oracles.py), never from a stored copy of pt2doctor's output.
"""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from oracles import marker_in, raw_records
from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
Report = dict[str, Any]


def constant(name: str, variable: str) -> Any:
    """A module-level constant of a program (``LENGTHS = (4, 5, 6, 7)``), read from its source."""
    tree = ast.parse((PROGRAMS / f"{name}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == variable:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{variable} not in {name}.py")


def mark(name: str, marker: str) -> int:
    return marker_in(PROGRAMS / f"{name}.py", marker)


def raw_reasons(trace_dir: Path) -> dict[str, str]:
    """compile id -> Dynamo's own recompile_reasons payload (the raw text)."""
    reasons = {}
    for envelope, payload in raw_records(trace_dir):
        if envelope.get("artifact", {}).get("name") == "recompile_reasons":
            reasons[f"{envelope['frame_id']}/{envelope['frame_compile_id']}"] = payload
    return reasons


def raw_guards(trace_dir: Path, frame_compile_id: int) -> str:
    (text,) = [
        payload
        for envelope, payload in raw_records(trace_dir)
        if "dynamo_cpp_guards_str" in envelope and envelope["frame_compile_id"] == frame_compile_id
    ]
    return text


@pytest.fixture(scope="module")
def explained(traced, tmp_path_factory: pytest.TempPathFactory):
    """``explained(name) -> (report, terminal text)`` of ``pt2doctor report`` on its trace."""
    out_dir = tmp_path_factory.mktemp("explained")
    cache: dict[str, tuple[Report, str]] = {}

    def build(name: str) -> tuple[Report, str]:
        if name not in cache:
            out = out_dir / f"{name.replace('/', '_')}.json"
            terminal = out.with_suffix(".txt")
            assert main(["report", str(traced(name)), "--json", str(out), "--format", "json"]) == 0
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                assert main(["report", str(traced(name)), "--json", str(out)]) == 0
            terminal.write_text(buffer.getvalue())
            cache[name] = (json.loads(out.read_text()), buffer.getvalue())
        return cache[name]

    return build


def only_frame(report: Report) -> dict[str, Any]:
    frames = [f for f in report["frames"] if f["recompiles"] or f["refused"]]
    assert len(frames) == 1, [f["function"] for f in report["frames"]]
    return frames[0]


def recompile_finding(report: Report) -> dict[str, Any]:
    (finding,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    return finding


def changes(frame: dict[str, Any]) -> list[list[tuple[str, str, str | None, str | None]]]:
    return [
        [(c["source"], c["kind"], c["old"], c["new"]) for c in entry["changes"]]
        for entry in frame["recompiles"]
    ]


def assert_readable(terminal: str) -> None:
    """No raw guard spelling in what a person reads, and every line fits 80 columns."""
    assert "L['" not in terminal and "_modules[" not in terminal, terminal
    assert max(len(line) for line in terminal.splitlines()) <= 80


# --- a counter attribute -----------------------------------------------------------------------


def test_counter_attribute(explained, traced) -> None:
    name = "recompiles/counter_attr"
    calls = constant(name, "CALLS")
    report, terminal = explained(name)
    frame = only_frame(report)
    reasons = raw_reasons(traced(name))
    assert len(reasons) == calls - 1 == len(frame["recompiles"])
    assert changes(frame) == [
        [("self.num_updates", "value", str(n), str(n + 1))] for n in range(calls - 1)
    ]
    (first,) = frame["recompiles"][0]["changes"]
    assert first["installed_at"]["line"] == mark(name, "increment")
    # Dynamo's own HINT is kept verbatim.
    raw_hint = re.search(r"\(HINT: (.+?)\)\n", reasons["0/1"])
    assert raw_hint is not None and first["hint"] == raw_hint.group(1)
    outlook = frame["outlook"]
    assert outlook["bounded"] is False
    assert outlook["recompile_limit"] == 8  # torch's default; the program does not change it
    assert outlook["limit_after_calls"] == 8 - calls
    assert [v["values"] for v in outlook["varying"]] == [[str(n) for n in range(calls)]]
    finding = recompile_finding(report)
    assert finding["severity"] == "warning"
    assert "torch._dynamo.config.allow_unspec_int_on_nn_module = True" in finding["advice"]
    assert "self.num_updates" in finding["advice"]
    assert f"after {8 - calls} more new value{'' if 8 - calls == 1 else 's'}" in outlook["reason"]
    assert "baked in" not in finding["advice"]
    assert_readable(terminal)


# --- a dict keyed by a length ----------------------------------------------------------------


def test_dict_keyed_by_a_length(explained, traced) -> None:
    name = "recompiles/length_dict"
    lengths = constant(name, "LENGTHS")
    report, terminal = explained(name)
    frame = only_frame(report)
    reasons = raw_reasons(traced(name))
    for old, new in itertools.pairwise(lengths):
        assert f"expected {old}, actual {new}" in reasons[f"0/{lengths.index(new)}"]
    assert changes(frame) == [
        [("x.shape[0]", "size", str(old), str(new))] for old, new in itertools.pairwise(lengths)
    ]
    # The symbol Dynamo created was specialized again by the dict lookup: not dynamic.
    assert not any(c["dynamic"] for entry in frame["recompiles"] for c in entry["changes"])
    assert all(row["dynamic"] == [] for row in frame["variants_table"])
    assert [row["serves"] for row in frame["variants_table"]] == [
        {"x.shape[0]": str(n)} for n in lengths
    ]
    assert frame["outlook"]["bounded"] is False
    assert frame["outlook"]["limit_after_calls"] == 8 - len(lengths)
    finding = recompile_finding(report)
    assert finding["severity"] == "warning"
    assert f"length_dict.py:{mark(name, 'lookup')}" in finding["advice"]
    assert "SCALES[x.shape[0]]" in finding["advice"]
    assert "ConstraintViolationError" in finding["advice"]
    assert_readable(terminal)


# --- train/eval with no_grad evaluation --------------------------------------------------------


def test_train_eval_is_two_variants_by_design(explained, traced) -> None:
    name = "recompiles/train_eval"
    report, terminal = explained(name)
    frame = only_frame(report)
    trace = traced(name)
    # Every `.training == True` guard of the first variant flips in the second.
    submodules = raw_guards(trace, 0).count(".training == True")
    assert submodules == raw_guards(trace, 1).count(".training == False") >= 2
    assert "grad_mode" in raw_reasons(trace)["0/1"]
    assert frame["variants"] == 2
    (recompile,) = frame["recompiles"]
    by_source = {c["source"]: c for c in recompile["changes"]}
    training = by_source["self.training"]
    assert (training["kind"], training["old"], training["new"]) == ("flag", "True", "False")
    assert (training["count"], training["unit"]) == (submodules, "submodules")
    grad = by_source["grad mode"]
    assert (grad["kind"], grad["old"], grad["new"]) == ("grad_mode", "True", "False")
    assert len(recompile["changes"]) == 2
    assert [row["serves"] for row in frame["variants_table"]] == [
        {"self.training": "True", "grad mode": "True"},
        {"self.training": "False", "grad mode": "False"},
    ]
    assert frame["outlook"]["bounded"] is True
    assert frame["outlook"]["limit_after_calls"] is None
    finding = recompile_finding(report)
    assert finding["severity"] == "info"
    assert "2 variants by design; pre-warm them" in finding["title"]
    assert "Pre-warm" in finding["advice"]
    # Each change said once: the grad mode's kind is its name ("grad mode grad mode" before).
    assert "0/1 vs 0/0: grad mode True → False" in finding["evidence"]
    assert_readable(terminal)


# --- a second memory layout ---------------------------------------------------------------------


def test_a_transposed_view_of_the_same_sizes_is_a_second_layout(explained, traced) -> None:
    name = "recompiles/layout"
    heads, seq, dim = (constant(name, v) for v in ("HEADS", "SEQ", "DIM"))
    report, terminal = explained(name)
    frame = only_frame(report)
    assert "stride mismatch" in raw_reasons(traced(name))["0/1"]
    # Strides of a contiguous (heads, seq, dim) tensor, then of a (seq, heads, dim) one
    # transposed to the same sizes: only strides change, never a size.
    contiguous, transposed = (seq * dim, dim), (dim, heads * dim)
    (recompile,) = frame["recompiles"]
    by_source = {c["source"]: c for c in recompile["changes"]}
    assert {c["kind"] for c in recompile["changes"]} == {"stride"}
    first = by_source["keys.stride()[0]"]
    assert (first["old"], first["new"]) == (str(contiguous[0]), str(transposed[0]))
    assert [row["serves"]["keys.stride()[0]"] for row in frame["variants_table"]] == [
        str(contiguous[0]),
        str(transposed[0]),
    ]
    assert frame["outlook"]["bounded"] is True
    assert "a second memory layout (keys.stride()[0]" in frame["outlook"]["reason"]
    finding = recompile_finding(report)
    assert finding["severity"] == "info"
    assert ".contiguous()" in finding["advice"] and "keys.stride()[0]" in finding["advice"]
    assert_readable(terminal)


# --- a tensor on another device ----------------------------------------------------------------


def test_a_tensor_on_another_device_is_named_as_its_device(explained, traced, doctor_run) -> None:
    """Dynamo guards the tensor's dispatch keys (its own reason says so); the change is read as
    the device, cpu → meta, with the device fix. The fix applied (``--one-device``): one
    compile, no recompile."""
    name = "recompiles/device"
    assert "dispatch key set mismatch" in raw_reasons(traced(name))["0/1"]
    report, terminal = explained(name)
    frame = only_frame(report)
    assert changes(frame) == [[("x", "device", "cpu", "meta")]]  # one recompile, one change
    assert frame["outlook"]["bounded"] is True
    finding = recompile_finding(report)
    assert finding["severity"] == "info"
    assert (
        "x on cpu / meta" in finding["advice"] and "move it where it is made" in finding["advice"]
    )
    assert "dispatch keys" not in terminal
    assert_readable(terminal)
    fixed = doctor_run("device_one", ("--backend", "eager"), "../recompiles/device", "--one-device")
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    after = json.loads((fixed.run_dir / "report.json").read_text())
    assert after["summary"]["compiles"] == 1 and after["summary"]["recompiles"] == 0


# --- a recompile-limit hit ------------------------------------------------------------------


def test_recompile_limit_hit_counts_the_refusal_apart(explained, traced) -> None:
    name = "limit_hit"
    limit = int(re.search(r"recompile_limit = (\d+)", (PROGRAMS / f"{name}.py").read_text())[1])
    report, terminal = explained(name)
    frame = only_frame(report)
    refused_ids = [
        env["compilation_metrics"]["compile_id"]
        for env, _ in raw_records(traced(name))
        if "recompile limit" in (env.get("compilation_metrics", {}).get("fail_reason") or "")
    ]
    assert len(refused_ids) == 1
    assert frame["refused"]["compile_id"] == refused_ids[0]
    assert frame["refused"]["failed_guards"]
    assert [r["compile_id"] for r in frame["recompiles"]] == [f"0/{n}" for n in range(1, limit)]
    assert report["failures"] == []  # the refusal is not also a failure
    summary = report["summary"]
    assert (summary["recompiles"], summary["refused"], summary["failures"]) == (limit - 1, 1, 0)
    assert f"{limit - 1} recompiles + 1 refused" in terminal
    outlook = frame["outlook"]
    assert (outlook["bounded"], outlook["limit_after_calls"]) == (False, 0)
    assert outlook["recompile_limit"] == limit
    assert changes(frame)[0] == [("mode", "value", "'a'", "'bb'")]
    finding = recompile_finding(report)
    assert finding["severity"] == "error"
    assert f"limit_hit.py:{mark(name, 'mode')}" in finding["advice"]
    assert "Pass it as a tensor" in finding["advice"]
    assert_readable(terminal)


# --- Hugging Face generate() with a growing KV cache ------------------------------------------


def test_hf_generate_prefill_and_decode(explained, traced) -> None:
    pytest.importorskip("transformers")
    name = "recompiles/hf_generate"
    prompts = constant(name, "PROMPTS")
    report, terminal = explained(name)
    frame = only_frame(report)
    reasons = raw_reasons(traced(name))
    assert f"expected {prompts[0]}, actual 1" in reasons["0/1"]  # the first decode step
    first = {c["source"]: c for c in frame["recompiles"][0]["changes"]}
    ids = first["kwargs['input_ids'].shape[1]"]
    assert (ids["kind"], ids["old"], ids["new"]) == ("size", str(prompts[0]), "1")
    cache = first["kwargs['cache'].layers[*].is_initialized"]
    assert (cache["old"], cache["new"], cache["count"]) == ("False", "True", 2)  # n_layer=2
    # The stride of input_ids only followed its size: folded, not a line of its own.
    assert "kwargs['input_ids'].stride()[0]" in ids["folded"]
    second = {c["source"]: c for c in frame["recompiles"][1]["changes"]}
    keys = second["kwargs['cache'].layers[*].keys.shape[2]"]
    assert (keys["old"], keys["new"], keys["dynamic"]) == (
        str(prompts[0]),
        str(prompts[0] + 1),
        True,
    )
    assert frame["recompiles"][1]["compared_with"] == "0/1"
    third = {c["source"]: c for c in frame["recompiles"][2]["changes"]}
    assert third["kwargs['input_ids'].shape[1]"]["new"] == str(prompts[1])
    assert third["kwargs['input_ids'].shape[1]"]["dynamic"] is True
    # Each variant's values come from its own guards: the prefill has no cached keys at all.
    keys_source = "kwargs['cache'].layers[*].keys.shape[2]"
    table = {row["compile_id"]: row["serves"] for row in frame["variants_table"]}
    assert keys_source not in table["0/0"]
    assert (table["0/1"][keys_source], table["0/2"][keys_source]) == (str(prompts[0]), "dynamic")
    assert table["0/3"]["kwargs['input_ids'].shape[1]"] == "dynamic"
    assert frame["outlook"]["bounded"] is True
    finding = recompile_finding(report)
    assert finding["severity"] == "info"
    assert 'cache_implementation="static"' in finding["advice"]
    assert "(Hugging Face generate()); a static cache compiles fewer" in finding["title"]
    assert "L['" not in terminal and "_modules[" not in terminal
