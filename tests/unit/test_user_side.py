"""The user-side diagnosis as pure functions: opcheck results, hooks and frames, toggles, error
messages naming custom ops, tracebacks, and the conclusion and workarounds they produce.
The messages are torch 2.13's own (copied from real opcheck and Inductor runs)."""

from __future__ import annotations

from typing import Any

from pt2doctor.ablate.classify import conclusion, workarounds
from pt2doctor.ablate.repro import config_lines
from pt2doctor.analysis.userside.causes import (
    GENERIC_SHAPE,
    custom_op_advice,
    custom_op_verdict,
    custom_ops_named,
    data_dependent_verdict,
    diagnose,
    hook_verdict,
    shape_example,
    toggle_verdict,
)
from pt2doctor.trace.messages import innermost_user_frame

FAKE_MESSAGE = (
    "When comparing the output of i14demo.rms_score.default on FakeTensor and concrete "
    "Tensors, found mismatched tensor metadata: Shapes torch.Size([10]) and "
    "torch.Size([10, 24]) are not equal!"
)
HOOK = {
    "hook": "post_grad_custom_post_pass",
    "function": "fold_unit_multiplies",
    "file": "/home/me/proj/passes.py",
    "line": 10,
}
CRASH = {"backend": "inductor", "layer": "inductor", "status": "crash", "error": "boom"}


def op(name: str, failing: dict[str, str]) -> dict[str, Any]:
    tests = ("test_schema", "test_autograd_registration", "test_faketensor")
    checks = [
        {"name": test, "passed": test not in failing, "message": failing.get(test, "")}
        for test in tests
    ]
    return {"op": name, "inputs": ["Tensor[10, 24] float32"], "checks": checks}


def test_a_wrong_fake_names_the_op_the_test_the_numbers_and_the_fix() -> None:
    ops = [op("ns.ok.default", {}), op("ns.rms_score.default", {"test_faketensor": FAKE_MESSAGE})]
    verdict = custom_op_verdict(ops)
    assert verdict is not None
    assert (verdict["kind"], verdict["op"], verdict["test"]) == (
        "custom_op_fake",
        "ns.rms_score.default",
        "test_faketensor",
    )
    assert "(the kernel returns shape [10], register_fake [10, 24])" in verdict["detail"]
    assert "torch.ops.ns.rms_score.default's register_fake" in verdict["fix"]
    assert "Tensor[10, 24] float32" in verdict["evidence"][0]


def test_the_fakes_example_fits_the_shapes_the_kernel_returned() -> None:
    """The example in the fix is written from the kernel's output shape and the op's argument
    names (its schema): an input's shape, that shape without its last dim, or the rule."""
    message = "Shapes torch.Size([{}]) and torch.Size([1, 8]) are not equal!"
    inputs, names = ["Tensor[1, 8, 64] float32", "Tensor[64] float32"], ["x", "weight"]
    same = shape_example(message.format("1, 8, 64"), inputs, names)
    assert same == "the kernel returns x's shape: torch.empty_like(x)"
    dropped = shape_example(message.format("1, 8"), inputs, names)
    assert dropped == "the kernel drops x's last dim: x.new_empty(x.shape[:-1])"
    assert shape_example(message.format("64"), inputs, names) == (
        "the kernel returns weight's shape: torch.empty_like(weight)"
    )
    assert shape_example(message.format("3"), inputs, names) == GENERIC_SHAPE
    assert shape_example(message.format("1, 8, 64"), inputs, None) == GENERIC_SHAPE
    with_names = {**op("ns.rms.default", {"test_faketensor": message.format("1, 8, 64")})}
    with_names.update(inputs=inputs, arguments=names)
    verdict = custom_op_verdict([with_names])
    assert (
        verdict is not None
        and "(the kernel returns x's shape: torch.empty_like(x))" in (verdict["fix"])
    )


def test_schema_failures_come_before_fake_failures_and_passing_ops_prove_nothing() -> None:
    both = {"test_faketensor": FAKE_MESSAGE, "test_schema": "x was mutated"}
    verdict = custom_op_verdict([op("ns.scale_.default", both)])
    assert verdict is not None and verdict["kind"] == "custom_op_schema"
    assert "mutates_args" in verdict["fix"]
    autograd = custom_op_verdict([op("ns.f.default", {"test_autograd_registration": "no"})])
    assert autograd is not None and autograd["kind"] == "custom_op_autograd"
    assert "register_autograd('ns::f'" in autograd["fix"]
    assert custom_op_verdict([op("ns.ok.default", {})]) is None


def test_a_pass_is_blamed_by_the_frame_it_raised_in() -> None:
    frames = [{"function": "fold_unit_multiplies", "file": "/home/me/proj/passes.py", "line": 12}]
    verdict = hook_verdict([HOOK], frames, None, None)
    assert verdict is not None and verdict["kind"] == "user_pass"
    assert verdict["detail"] == (
        "your compiler pass fold_unit_multiplies (passes.py:10), installed as "
        "post_grad_custom_post_pass"
    )
    assert verdict["evidence"] == ["the error was raised in fold_unit_multiplies (passes.py:12)"]
    assert "torch._inductor.config.post_grad_custom_post_pass = None" in verdict["fix"]


def test_a_pass_is_blamed_by_the_bisector_or_the_toggle_but_not_without_proof() -> None:
    bisected = {"debug_info": "post_grad_custom_post_pass"}
    by_bisector = hook_verdict([HOOK], [], bisected, None)
    assert by_bisector is not None and by_bisector["function"] == "fold_unit_multiplies"
    by_toggle = hook_verdict([HOOK], [], None, {"name": "without user hooks", "status": "ok"})
    assert (
        by_toggle is not None and "passes without the program's hooks" in by_toggle["evidence"][0]
    )
    still_failing = {"name": "without user hooks", "status": "crash"}
    assert hook_verdict([HOOK], [], {"debug_info": "other_pass"}, still_failing) is None
    other_file = [{"function": "fold_unit_multiplies", "file": "/elsewhere.py", "line": 3}]
    assert hook_verdict([HOOK], other_file, None, None) is None


def test_toggles_that_fix_a_divergence_are_by_design() -> None:
    rng = toggle_verdict([{"name": "fallback_random=True", "status": "ok"}])
    assert rng is not None and rng["kind"] == "rng" and "not a bug" in rng["fix"]
    casts = [
        {"name": "fallback_random=True", "status": "diverged"},
        {"name": "emulate_precision_casts=True", "status": "ok"},
    ]
    precision = toggle_verdict(casts)
    assert precision is not None and precision["kind"] == "precision"
    assert toggle_verdict([{"name": "dynamic=False", "status": "ok"}]) is None


def test_the_conclusion_is_user_side_and_never_sends_upstream() -> None:
    pieces = {
        "rungs": [{**CRASH, "user_frames": [], "hooks": [HOOK]}],
        "toggles": [{"name": "without user hooks", "status": "ok"}],
        "hooks": [HOOK],
    }
    user = diagnose(pieces, pieces["rungs"][0])
    verdict = conclusion(pieces["rungs"], None, None, user)
    assert verdict["category"] == "user_side" and verdict["user_side"] == user
    assert "your compiler pass fold_unit_multiplies" in verdict["sentence"]
    advice = workarounds("user_side", pieces["toggles"], "blocks.0", "aot_eager", user)
    assert advice[0] == user["fix"]
    assert not any("upstream" in line for line in advice)
    plain = conclusion([CRASH], None, None)
    assert plain["category"] == "compiler_bug" and plain["user_side"] is None


def test_custom_ops_named_in_messages_skip_torch_namespaces() -> None:
    message = (
        "AssertionError: wrong number of dimensions1 for op: torch.ops.ns.rms_score.default "
        "(after torch.ops.aten.addmm.default and torch.ops.prims.convert_element_type)"
    )
    assert custom_ops_named(message) == ["torch.ops.ns.rms_score"]
    advice = custom_op_advice(message)
    assert advice is not None and "torch.ops.ns.rms_score" in advice
    assert custom_op_advice("RuntimeError: torch.ops.aten.mm failed") is None


def test_the_innermost_user_frame_of_a_traceback() -> None:
    lines = """Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/torch/_dynamo/output_graph.py", line 1500, in call
    compiled_fn = compiler_fn(gm, self.example_inputs())
  File "/home/me/proj/train.py", line 40, in forward
    return self.net(x)
  File "/home/me/proj/passes.py", line 12, in channels_last_prep_pass
    raise RuntimeError("bad layout")
  File "/usr/lib/python3.11/site-packages/torch/_inductor/pattern_matcher.py", line 9, in f
    pass
RuntimeError: bad layout""".splitlines()
    frame = innermost_user_frame(lines)
    assert frame is not None
    assert (frame.file, frame.line, frame.function) == (
        "/home/me/proj/passes.py",
        12,
        "channels_last_prep_pass",
    )
    assert innermost_user_frame(lines[:3]) is None


def test_config_lines_keep_literals_and_leave_hooks_to_the_import() -> None:
    changes = {
        "inductor": {
            "fallback_random": "True",
            "post_grad_custom_post_pass": "<function fold at 0x7f>",
        },
        "dynamo": {"cache_size_limit": "16"},
    }
    assert config_lines(changes) == (
        "torch._dynamo.config.cache_size_limit = 16  # set by your program\n"
        "torch._inductor.config.fallback_random = True  # set by your program\n"
    )


# torch 2.13's own messages (tests/programs/failures/dynamic_only.py, data_dependent.py).
SPECIALIZED = (
    "ConstraintViolationError: Constraints violated (L['x'].size()[0])! For more information, "
    "run with TORCH_LOGS=\"+dynamic\". - You marked L['x'].size()[0] as dynamic but your code "
    "specialized it to be a constant (4). If you're using mark_dynamic, either remove it or use "
    'maybe_mark_dynamic. User stack: File "/home/me/dynamic_only.py", line 16, in forward '
    "if x.shape[0] == 4: # MARK:specializes ^^^^^^^"
)
DATA_DEPENDENT = (
    "UserError: Consider annotating your code using torch._check*(). Could not guard on "
    "data-dependent expression u0 > 0 (unhinted: u0 > 0). Caused by: if n > 0: # MARK:branch # "
    "tests/programs/failures/data_dependent.py:12 in route (_dynamo/variables/tensor.py:2606 in "
    "evaluate_expr)"
)


def test_a_size_marked_dynamic_that_the_code_specializes_is_named_at_the_users_line() -> None:
    crash = {"status": "crash", "error": SPECIALIZED, "error_types": ["ConstraintViolationError"]}
    user = data_dependent_verdict(crash)
    assert user is not None and user["kind"] == "dynamic_specialized"
    assert user["where"] == "dynamic_only.py:16"
    assert user["detail"] == (
        "x.shape[0] is marked dynamic, but your code specializes it to 4 "
        "(dynamic_only.py:16: `if x.shape[0] == 4:`)"
    )
    assert "maybe_mark_dynamic" in user["fix"]


def test_a_data_dependent_guard_is_named_at_the_branch() -> None:
    crash = {"status": "crash", "error": DATA_DEPENDENT, "error_types": ["UserError"]}
    user = data_dependent_verdict(crash)
    assert user is not None and user["kind"] == "data_dependent"
    assert user["where"] == "data_dependent.py:12"
    assert "at data_dependent.py:12 (`if n > 0:`)" in user["fix"]


def test_a_fake_of_the_wrong_dtype_gets_the_dtype_fix_and_the_cache_warning() -> None:
    message = (
        "When comparing the output of ns.row_max.default on FakeTensor and concrete Tensors, "
        "found mismatched tensor metadata: Dtypes torch.bfloat16 and torch.float32 are not equal!"
    )
    ops = [{**op("ns.row_max.default", {"test_faketensor": message}),
            "inputs": ["Tensor[4, 8] bfloat16"], "arguments": ["x"]}]  # fmt: skip
    user = custom_op_verdict(ops)
    assert user is not None and "x.new_empty(...)" in user["fix"]
    assert "the kernel returns torch.bfloat16, register_fake torch.float32" in user["fix"]
    assert "delete the Inductor cache directory (TORCHINDUCTOR_CACHE_DIR" in user["fix"]
    assert GENERIC_SHAPE not in user["fix"]


def test_a_dynamo_stop_at_a_known_library_site_gets_that_sites_fix() -> None:
    """GPT-2 compiled with fullgraph=True stops at transformers' loss_function logging (torch
    2.13's message, its debug context naming the loss it falls back to): the fix is the
    graph-break report's, `model.loss_type`, before the generic advice."""
    from pt2doctor.ablate.report import known_site_fix

    failing = {
        "status": "crash",
        "error": "Unsupported: logging.Logger method not supported for non-export cases "
        "Explanation: logging.Logger methods are not supported for non-export cases. (at "
        "/venv/lib/python3.11/site-packages/transformers/modeling_utils.py:4778 in "
        "loss_function: logger.warning_once()",
        "message": "logging.Logger method not supported for non-export cases\n  Developer "
        "debug context: method: <Logger transformers.modeling_utils (WARNING)>.warning_once, "
        "args: [ConstantVariable(str: '`loss_type=None` was set in the config but it is "
        "unrecognized. Using the default loss: `ForCausalLMLoss`.')]",
        "stopped_at": {
            "file": "/venv/lib/python3.11/site-packages/transformers/modeling_utils.py",
            "line": 4778,
            "function": "loss_function",
            "code": "logger.warning_once()",
        },
    }
    fix = known_site_fix(failing)
    assert fix is not None and '`model.loss_type = "ForCausalLM"`' in fix
    assert (
        known_site_fix(
            {**failing, "stopped_at": {"file": "/home/me/train.py", "line": 3, "function": "f"}}
        )
        is None
    )
