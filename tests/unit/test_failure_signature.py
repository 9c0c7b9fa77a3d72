"""Failure signatures: a repro reproduces only when it fails with the program's innermost
error, its message alike up to what changes between runs (paths, numbers, buffer names)."""

from __future__ import annotations

from pt2doctor.ablate.signature import crash_signature, failure_signature, repro_signature


def test_a_wrapped_backend_error_and_the_bare_one_a_repro_raises_are_the_same() -> None:
    wrapped = crash_signature(
        "BackendCompilerFailed: backend='relu_compile_error_TESTING_ONLY' raised: "
        "ReluCompileError: relu in buf12 at /tmp/a/b.py:41"
    )
    bare = repro_signature(
        "REPRODUCED: the compiled call raised ReluCompileError: relu in buf3 at /home/u/x/y.py:7"
    )
    assert wrapped == bare
    assert wrapped.type == "ReluCompileError" and "<path>" in wrapped.message


def test_a_different_error_is_a_different_failure() -> None:
    original = failure_signature(
        {"status": "crash", "error": "InductorError: RuntimeError: shape mismatch [8] vs [4]"}
    )
    other = repro_signature(
        "REPRODUCED: compiling the graph raised AttributeError: '_OpNamespace' 'zoo_ops' object "
        "has no attribute 'rms_score'"
    )
    assert other is not None and other != original
    assert original.text() == "RuntimeError: shape mismatch [<n>] vs [<n>]"


def test_wrong_numbers_match_wrong_numbers_and_a_pass_is_no_failure() -> None:
    diverged = failure_signature({"status": "diverged", "worst": {"max_abs_error": 0.5}})
    assert repro_signature("REPRODUCED: output 0 differs from eager: max abs error 0.5") == diverged
    assert repro_signature("not reproduced: backend 'aot_eager' matches eager") is None
    assert repro_signature("REPRODUCED: the compiled call raised ValueError: x") != diverged


def test_a_repro_that_fails_differently_does_not_count(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The check runs the repro for real: one that exits 1 with another error (the op it
    needs is not registered in it) is not the program's failure."""
    from pt2doctor.ablate.driver import verify_repro
    from pt2doctor.ablate.render import _checked

    repro = tmp_path / "repro.py"
    repro.write_text(
        "import sys\n"
        "print(\"REPRODUCED: compiling the graph raised AttributeError: '_OpNamespace' 'zoo' \"\n"
        "      \"object has no attribute 'rms_score'\")\n"
        "sys.exit(1)\n"
    )
    failure = {"status": "crash", "error": "InductorError: RuntimeError: fake shape [8] != [4]"}
    verified = verify_repro(repro, 60, failure)
    assert verified["exit_code"] == 1 and verified["reproduces"] is False
    assert verified["signature"].startswith("AttributeError: ")
    assert verified["expected"] == "RuntimeError: fake shape [<n>] != [<n>]"
    line = _checked(verified)  # type: ignore[arg-type]
    assert line.startswith("does NOT reproduce: it fails with AttributeError")
    same = {"status": "crash", "error": "AttributeError: '_OpNamespace' 'zoo' object has no "
            "attribute 'rms_score'"}  # fmt: skip
    assert verify_repro(repro, 60, same)["reproduces"] is True


def test_an_opcheck_stage_that_did_not_run_is_said_not_passed() -> None:
    """A custom op entry with an error (its stage died, or the opcheck run ended early) reads
    as not run; it used to read "opcheck passes"."""
    from pt2doctor.ablate.render import detail_lines

    report = {"conclusion": {"user_side": None}, "custom_ops": [
        {"op": "zoo.score.default", "checks": [], "passed": None,
         "error": "the opcheck run ended before checking it (exit 1)"}]}  # fmt: skip
    lines = detail_lines(report)  # type: ignore[arg-type]
    assert lines == [
        "custom op zoo.score.default: opcheck did not run: the opcheck run ended before "
        "checking it (exit 1)"
    ]


def test_a_one_line_summary_and_the_raw_message_of_one_dynamo_error_agree() -> None:
    """pt2doctor's summary drops Dynamo's hints and appends the user frame; a repro prints the
    raw message with its hints and links: both are cut where the explanation ends."""
    summary = crash_signature(
        "Unsupported: missing BUILD_SET handler Explanation: Missing BUILD_SET bytecode handler "
        "(for testing purposes). (at /home/u/prog.py:12 in reduce_rows: dims = {0, 1})"
    )
    raw = repro_signature(
        "REPRODUCED: running the program raised Unsupported: missing BUILD_SET handler "
        "Explanation: Missing BUILD_SET bytecode handler (for testing purposes). Developer debug "
        "context: For more details about this graph break, please visit: https://x.io/gb0200"
    )
    assert summary == raw and summary.type == "Unsupported"
    assert summary.message.endswith("(for testing purposes).")


def test_a_stage_that_raises_is_a_line_not_a_traceback() -> None:
    from pt2doctor.ablate.driver import guarded

    def write() -> dict[str, object]:
        raise OSError("[Errno 28] No space left on device: '/out/repro/repro.py'")

    repro = guarded("repro", write, lambda why: {"written": False, "reason": why})
    assert repro == {
        "written": False,
        "reason": "the repro stage failed: OSError: [Errno 28] No space left on device: "
        "'/out/repro/repro.py'",
    }
    assert guarded("repro", lambda: {"written": True}, lambda why: {}) == {"written": True}
