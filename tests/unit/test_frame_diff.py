"""``pt2doctor diff`` per frame (analysis/diff/reports.py): one line with variants, causes, compile time
and the outlook, before and after; causes are the whole set on each side (a frame that had size
causes and now has python_constant ones does not read "none -> python_constant")."""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.diff.reports import diff_reports


def report(
    variants: int, causes: list[str], seconds: float, bounded: bool | None
) -> dict[str, Any]:
    ids = [f"0/{n}" for n in range(variants)]
    return {
        "graph_breaks": [],
        "frames": [
            {
                "function": "step", "file": "/a/prog.py", "line": 3, "stream": "s",
                "variants": variants, "compile_ids": ids,
                "recompiles": [
                    {"compile_id": cid, "failed_guards": [{"category": cause}]}
                    for cid, cause in zip(ids[1:], causes, strict=False)
                ],
                "outlook": {"bounded": bounded},
            }
        ],
        "compiles": [
            {"compile_id": cid, "stream": "s", "compile_time_s": seconds / variants,
             "function": "step", "file": "/a/prog.py", "line": 3}
            for cid in ids
        ],
        "summary": {"total_compile_time_s": seconds, "failures": 0},
        "environment": {},
    }  # fmt: skip


def test_frame_line_names_both_cause_sets() -> None:
    before = report(5, ["size", "size", "attribute_value", "size"], 77.0, True)
    after = report(2, ["python_constant"], 12.0, True)
    diff = diff_reports(before, after)
    (change,) = [c for c in diff.changes if c.kind == "frame"]
    assert change.detail == (
        "variants 5 → 2; causes {attribute_value, size} → {python_constant}; "
        "compile time 77 s → 12 s; bounded → bounded"
    )
    # Fewer variants is the better side, whatever the causes: the other way round is the
    # regression, so A → B and B → A never both are (issue 39).
    assert change.regression is False
    assert (change.before, change.after) == (5, 2)
    (back,) = [c for c in diff_reports(after, before).changes if c.kind == "frame"]
    assert back.regression is True


def test_fewer_variants_with_the_same_causes_is_not_a_regression() -> None:
    diff = diff_reports(report(4, ["size"] * 3, 9.0, False), report(2, ["size"], 3.0, True))
    (change,) = [c for c in diff.changes if c.kind == "frame"]
    assert change.regression is False
    assert change.detail.endswith("unbounded → bounded")


def _moved(report_: dict[str, Any], lines: int) -> dict[str, Any]:
    """The same report after ``lines`` lines were added above the frame (and its break)."""
    for frame in report_["frames"]:
        frame["line"] += lines
    for row in report_["compiles"]:
        row["line"] += lines
    for row in report_["graph_breaks"]:
        row["site"]["line"] += lines
    return report_


def _with_break(report_: dict[str, Any], line: int) -> dict[str, Any]:
    site = {"file": "/a/prog.py", "line": line, "function": "step", "code": "print(x)"}
    report_["graph_breaks"] = [{"site": site, "category": "print_or_logging", "gb_type": "g"}]
    return report_


def test_a_frame_and_a_break_that_moved_down_are_the_same() -> None:
    """An edit above the code (a comment, an import) shifts every line: the frame and its break
    are matched by file name, function and code when exactly one candidate is left on each
    side, so they are not reported as removed and new."""
    before = _with_break(report(2, ["size"], 4.0, True), 7)
    after = _moved(_with_break(report(2, ["size"], 4.0, True), 7), 3)
    assert diff_reports(before, after).changes == []
    # A second break with the same code in the same function: ambiguous, so not matched.
    twice = _moved(_with_break(report(2, ["size"], 4.0, True), 7), 3)
    twice["graph_breaks"].append(
        {**twice["graph_breaks"][0], "site": {**twice["graph_breaks"][0]["site"], "line": 20}}
    )
    kinds = sorted(c.kind for c in diff_reports(before, twice).changes)
    assert kinds == ["new_break_site", "new_break_site", "removed_break_site"]


def test_diff_values_are_read_at_three_significant_digits() -> None:
    """The total compile time of a cold and a warm nanoGPT run, as diff_reports gives it."""
    import io

    from rich.console import Console

    from pt2doctor.report.diff_view import render_diff_markdown, render_diff_terminal

    change = {"kind": "compile_time_s", "subject": "total compile time", "before": 25.016381,
              "after": 3.386329, "regression": False, "detail": "faster beyond noise"}  # fmt: skip
    diff = {"a": "warm1", "b": "warm2", "changes": [change], "regressions": 0}
    out = io.StringIO()
    render_diff_terminal(diff, Console(file=out, width=200))
    assert "total compile time: 25 → 3.39 (faster beyond noise)" in out.getvalue()
    assert "25.016381" not in render_diff_markdown(diff)


def _with_frame(report_: dict[str, Any], function: str, causes: list[str]) -> dict[str, Any]:
    """``report_`` with a second frame, ``function``, recompiled for ``causes``."""
    ids = [f"1/{n}" for n in range(len(causes) + 1)]
    report_["frames"].append(
        {
            "function": function, "file": "/a/lib.py", "line": 9, "stream": "s",
            "variants": len(ids), "compile_ids": ids,
            "recompiles": [
                {"compile_id": cid, "failed_guards": [{"category": cause}]}
                for cid, cause in zip(ids[1:], causes, strict=True)
            ],
            "outlook": {"bounded": True},
        }
    )  # fmt: skip
    return report_


def test_a_cause_that_moved_in_from_a_frame_gone_in_b_is_not_a_regression() -> None:
    """A fixed graph break: the callee Dynamo compiled on its own (with a self.training cause)
    joins its caller, whose causes grow by that one. The caller's line says where it came
    from; a cause no gone frame had is still a regression."""
    before = _with_frame(
        report(3, ["size", "grad_mode"], 4.0, True), "forward", ["attribute_value"]
    )
    after = report(3, ["size", "attribute_value"], 9.0, True)
    changes = [c for c in diff_reports(before, after).changes if c.kind == "frame"]
    (change,) = [c for c in changes if c.subject.startswith("step")]
    assert change.regression is False
    assert change.detail.endswith("{attribute_value} were causes of frames that are gone in B")
    # The gone frame itself is a change, never a regression.
    (gone,) = [c for c in changes if not c.subject.startswith("step")]
    assert gone.after == 0 and not gone.regression and gone.detail.startswith("gone in B")
    # A cause added that no gone frame had, none lost: a regression; one cause traded for
    # another at the same variant count is a change either way, a regression neither way.
    worse = report(3, ["size", "grad_mode"], 9.0, True)
    worse["frames"][0]["recompiles"][1]["failed_guards"].append({"category": "python_constant"})
    (change,) = [c for c in diff_reports(before, worse).changes
                 if c.kind == "frame" and c.subject.startswith("step")]  # fmt: skip
    assert change.regression is True
    traded = report(3, ["size", "python_constant"], 9.0, True)
    (change,) = [c for c in diff_reports(before, traded).changes
                 if c.kind == "frame" and c.subject.startswith("step")]  # fmt: skip
    (back,) = [c for c in diff_reports(traded, before).changes
               if c.kind == "frame" and c.subject.startswith("step")]  # fmt: skip
    assert (change.regression, back.regression) == (False, False)


def test_a_stride_that_changed_with_its_tensors_size_is_not_a_cause() -> None:
    def sized(with_stride: bool) -> dict[str, Any]:
        report_ = report(2, ["size"], 2.0, True)
        guards = report_["frames"][0]["recompiles"][0]["failed_guards"]
        guards[0]["text"] = "tensor 'L['x']' size mismatch at index 1. expected 17, actual 40"
        guards[0].update(tensor="x", field="size")
        if with_stride:
            text = "tensor 'L['x']' stride mismatch at index 0. expected 17, actual 40"
            guards.append({"category": "stride", "text": text, "tensor": "x", "field": "stride"})
        return report_

    assert not [c for c in diff_reports(sized(False), sized(True)).changes if c.kind == "frame"]
    other = sized(True)
    other["frames"][0]["recompiles"][0]["failed_guards"][1].update(
        text="tensor 'L['y']' stride mismatch at index 0. expected 1, actual 2", tensor="y"
    )
    (change,) = [c for c in diff_reports(sized(False), other).changes if c.kind == "frame"]
    assert change.regression is True


def test_an_address_in_a_config_value_is_no_environment_change() -> None:
    """A pass set as a plain function reads ``<function p at 0x7f...>`` in the environment:
    another process, another address, the same setting."""
    a, b = report(1, [], 1.0, True), report(1, [], 1.0, True)
    a["environment"] = {
        "config_changes": {
            "inductor": {"post_grad_custom_post_pass": "<function p at 0x7fcc40140b80>"}
        }
    }
    b["environment"] = {
        "config_changes": {
            "inductor": {"post_grad_custom_post_pass": "<function p at 0x7f11aa2210d0>"}
        }
    }
    assert not [c for c in diff_reports(a, b).changes if c.kind == "environment"]
    b["environment"]["config_changes"]["inductor"]["post_grad_custom_post_pass"] = (
        "<function q at 0x7f11aa2210d0>"
    )
    (change,) = [c for c in diff_reports(a, b).changes if c.kind == "environment"]
    assert change.regression is False and "q" in str(change.after)


def test_a_cache_bypass_that_became_a_hit_is_an_improvement() -> None:
    def looked_up(status: str) -> dict[str, Any]:
        report_ = report(1, [], 1.0, True)
        report_["compiles"][0]["caches"] = {"fx_graph": {
            "status": status, "key": "k", "bypass_reason":
            "Unsupported post grad custom pass" if status == "bypass" else None}}  # fmt: skip
        report_["cold_start"] = {"key_components": {}}
        return report_

    (fixed,) = [c for c in diff_reports(looked_up("bypass"), looked_up("hit")).changes
                if c.kind == "cache_miss_cause"]  # fmt: skip
    assert fixed.regression is False and "B hit where A bypassed" in fixed.detail
    (broken,) = [c for c in diff_reports(looked_up("hit"), looked_up("bypass")).changes
                 if c.kind == "cache_miss_cause"]  # fmt: skip
    assert broken.regression is True and "custom pass" in broken.detail
