"""Guard trees, guard-failure categories, recompile reasons and the guard-set diff.

The guard trees and recompile reasons below are payloads copied from real TORCH_TRACE logs
(torch 2.13.0+cpu, Python 3.11, backend="eager"), produced by:

* ``LAMBDA_*``: ``TORCH_TRACE=/tmp/gt python -c "import torch; f=torch.compile(lambda x, flag:
  x+1 if flag else x-1, backend='eager'); f(torch.randn(4), True);
  f(torch.randn(5, dtype=torch.float64), False)"``
* ``F_*`` and ``MODULE_*``: ``prog_guards.py`` (kept in the comment of each constant), run as
  ``TORCH_TRACE=/tmp/gt2 python prog_guards.py``; Dynamo shortens ``/tmp/gen/prog_guards.py``
  to ``mp/gen/prog_guards.py`` in guard comments, as it does in real logs.
* ``OLD_FORMAT_TREE``: tlparse's ``multi_rank_logs/dedicated_log_torch_trace_rank_1.log``
  (an older torch: no ``type=`` on managers, no user-code comments, no global-state JSON).
"""

from __future__ import annotations

import pytest

from pt2doctor.analysis.recompiles.guards import (
    GUARD_CATEGORIES,
    FailedGuard,
    categorize_guard,
    diff_guard_sets,
    merge_failed_guards,
    parse_recompile_reason,
)
from pt2doctor.trace.guard_tree import parse_cpp_guards
from pt2doctor.trace.types import Guard, SourceLine

_GLOBAL_STATE_JSON = (
    '{"allow_bf16_reduce":0,"allow_fp16_reduce":0,"allow_tf32":false,"autocast_state":'
    '{"cached_enabled":true,"dtype":[15,5,5,15,5,5,15,15,5,5],"enabled":[false,false,false,'
    'false,false,false,false,false,false,false]},"default_dtype":6,"deterministic_algorithms":'
    'false,"deterministic_algorithms_warn_only":false,"grad_mode":true,"num_threads":2,'
    '"torch_function":true,"torch_function_all_disabled":false}'
)

# Compile 0/0 of the lambda: x float32 of size 4, flag True.
LAMBDA_0_0 = f"""
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # _dynamo/output_graph.py:1135 in init_ambient_guards
| +- GLOBAL_STATE: ___check_global_state() against {_GLOBAL_STATE_JSON}
| +- TORCH_FUNCTION_MODE_STACK: ___check_torch_function_mode_stack()
| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:1122 in init_ambient_guards
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=0), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float32, device=None, requires_grad=False, size=[4], stride=[1])  #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_dynamic_indices') == False           #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_weak_dynamic_indices') == False      #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_unbacked_indices') == False          #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_strict_unbacked_indices') == False   #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_static_indices') == False            #   # <string>:1 in <lambda>
| +- GuardManager: source=L['flag'], accessed_by=FrameLocalsGuardAccessor(key='flag', framelocals_idx=1), type=<class 'bool'>, tag_safe=(False, False)
| | +- TRUE_MATCH: L['flag'] == True                                             #   # <string>:1 in <lambda>

Guard latency = 75.27 us
"""

# Compile 0/1 of the lambda: x float64 of size 5 (now dynamic, symbol s77 = 5), flag False.
LAMBDA_0_1 = f"""
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # _dynamo/output_graph.py:1135 in init_ambient_guards
| +- GLOBAL_STATE: ___check_global_state() against {_GLOBAL_STATE_JSON}
| +- TORCH_FUNCTION_MODE_STACK: ___check_torch_function_mode_stack()
| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:1122 in init_ambient_guards
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=0), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float64, device=None, requires_grad=False, size=[None], stride=[1])  #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_dynamic_indices') == False           #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_weak_dynamic_indices') == False      #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_unbacked_indices') == False          #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_strict_unbacked_indices') == False   #   # <string>:1 in <lambda>
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_static_indices') == False            #   # <string>:1 in <lambda>
| +- GuardManager: source=L['flag'], accessed_by=FrameLocalsGuardAccessor(key='flag', framelocals_idx=1), type=<class 'bool'>, tag_safe=(False, False)
| | +- FALSE_MATCH: L['flag'] == False                                            #   # <string>:1 in <lambda>
+- LAMBDA_GUARD: 2 <= L['x'].size()[0]  #   # <string>:1 in <lambda> (user code shown is first use of this value--the guard itself is not due user code but due to 0/1 specialization in the framework; to avoid specialization try torch._dynamo.decorators.mark_unbacked(tensor, dim))

Guard latency = 86.39 us
"""
LAMBDA_0_1_SYMBOLS = {"s77": ("L['x'].size()[0]", "5")}

# prog_guards.py:
#   14 def f(x, n):
#   15     return x * n + 1
# called as f(randn(4), 2) (compile 1/0), then f(randn(4), 5) (compile 1/1: n becomes the
# dynamic symbol s86 = 5), then f(randn(4, 2).t(), 7) (compile 1/3: x becomes 2-d and dynamic).
F_1_0 = """
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # _dynamo/output_graph.py:1135 in init_ambient_guards
| +- TORCH_FUNCTION_MODE_STACK: ___check_torch_function_mode_stack()
| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:1122 in init_ambient_guards
| +- GuardManager: source=L['n'], accessed_by=FrameLocalsGuardAccessor(key='n', framelocals_idx=1), type=<class 'int'>, tag_safe=(False, False)
| | +- EQUALS_MATCH: L['n'] == 2                                                   # return x * n + 1  # mp/gen/prog_guards.py:15 in f
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=0), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float32, device=None, requires_grad=False, size=[4], stride=[1])  # return x * n + 1  # mp/gen/prog_guards.py:15 in f
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_dynamic_indices') == False           # return x * n + 1  # mp/gen/prog_guards.py:15 in f
"""
F_1_1 = """
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # _dynamo/output_graph.py:1135 in init_ambient_guards
| +- TORCH_FUNCTION_MODE_STACK: ___check_torch_function_mode_stack()
| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:1122 in init_ambient_guards
| +- GuardManager: source=L['n'], accessed_by=FrameLocalsGuardAccessor(key='n', framelocals_idx=1), type=<class 'int'>, tag_safe=(False, False)
| | +- TYPE_MATCH: ___check_type_id(L['n'], 140230881803488), type=<class 'int'>  # return x * n + 1  # mp/gen/prog_guards.py:15 in f (HINT: type int)
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=0), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float32, device=None, requires_grad=False, size=[4], stride=[1])  # return x * n + 1  # mp/gen/prog_guards.py:15 in f
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_dynamic_indices') == False           # return x * n + 1  # mp/gen/prog_guards.py:15 in f
"""
F_1_3_TENSOR = (
    "| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, "
    "ADInplaceOrView, AutogradCPU), torch.float32, device=None, requires_grad=False, "
    "size=[None, None], stride=[1, None])  # return x * n + 1  # mp/gen/prog_guards.py:15 in f"
)

# prog_guards.py, a module whose forward branches on self.training (line 10):
# compile 0/0 in train mode, 0/1 after m.eval(). Excerpt: the training guard.
MODULE_TRAINING_TREE = """
+- RootGuardManager
| +- GuardManager: source=L['self'], accessed_by=FrameLocalsGuardAccessor(key='self', framelocals_idx=0), type=<class '__main__.M'>, tag_safe=(False, False)
| | +- TYPE_MATCH: ___check_type_id(L['self'], 94651261134752), type=<class '__main__.M'>  # y = self.lin(x)  # mp/gen/prog_guards.py:9 in forward (HINT: type M)
| | +- GuardManager: source=L['self'].__dict__, accessed_by=GetGenericDictGuardAccessor, type=<class 'dict'>, tag_safe=(False, False)
| | | +- GuardManager: source=L['self'].training, accessed_by=DictGetItemGuardAccessor('training'), type=<class 'bool'>, tag_safe=(False, False)
| | | | +- {kind}: L['self'].training == {value}                                    # if self.training:  # mp/gen/prog_guards.py:10 in forward
| | | +- GuardManager: source=L['self']._parameters, accessed_by=DictGetItemGuardAccessor('_parameters'), type=<class 'dict'>, tag_safe=(False, False)
| | | | +- TYPE_MATCH: ___check_type_id(L['self']._parameters, 140230881808032), type=<class 'dict'>  # y = self.lin(x)  # mp/gen/prog_guards.py:9 in forward (HINT: type dict)
"""

# A dict argument iterated with .items() (torch 2.13): key and value managers carry sources.
DICT_ITEMS_TREE = """
+- RootGuardManager
| +- DictGuardManager: source=L['d'], accessed_by=FrameLocalsGuardAccessor(key='d', framelocals_idx=0), type=<class 'dict'>, tag_safe=(False, False)
| | +- KeyValueManager pair at index=0
| | | +- KeyManager: GuardManager: source=list(dict.keys(L['d']))[0], type=<class 'str'>, tag_safe=(False, False)
| | | | +- EQUALS_MATCH: list(dict.keys(L['d']))[0] == 'a'                             # for k, v in d.items():  # mp/gen/prog_dict.py:4 in f
| | | +- ValueManager: GuardManager: source=L['d']['a'], type=<class 'int'>, tag_safe=(False, False)
| | | | +- EQUALS_MATCH: L['d']['a'] == 1                                              # x = x + v  # mp/gen/prog_dict.py:5 in f
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=1), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- NO_TENSOR_ALIASING
"""

OLD_FORMAT_TREE = f"""
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # _dynamo/output_graph.py:643 in init_ambient_guards
| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:631 in init_ambient_guards
| +- GLOBAL_STATE: ___check_global_state()
| +- TORCH_FUNCTION_MODE_STACK: ___check_torch_function_mode_stack()
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=0)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), torch.float32, device=None, requires_grad=False, size=[2, 2], stride=[2, 1])
| | +- NO_HASATTR: hasattr(L['x'], '_dynamo_dynamic_indices') == False{" " * 9}
| | +- GuardManager: source=L['x'].sum, accessed_by=GetAttrGuardAccessor(sum)

Guard latency = 15.88 us
"""

# The same older torch, a module iterating its children (a dict): its key/value managers print
# ``source=`` alone at the end of the line.
OLD_FORMAT_DICT_TREE = """
+- RootGuardManager
| +- GuardManager: source=L['self'], accessed_by=FrameLocalsGuardAccessor(key='self', framelocals_idx=0)
| | +- GuardManager: source=L['self'].training, accessed_by=GetAttrGuardAccessor(training)
| | | +- ID_MATCH: ___check_obj_id(L['self'].training, 7685824)
| | +- DictGuardManager: source=L['self']._modules, accessed_by=DictGetItemGuardAccessor('_modules')
| | | +- KeyValueManager pair at index=0
| | | | +- KeyManager: GuardManager: source=list(L['self']._modules.keys())[0]
| | | | | +- EQUALS_MATCH: list(L['self']._modules.keys())[0] == '0'
| | | | +- ValueManager: GuardManager: source=L['self']._modules['0']
| | | | | +- TYPE_MATCH: ___check_type_id(L['self']._modules['0'], 111068416)
"""


def _module_guards(kind: str, value: str) -> list[Guard]:
    return parse_cpp_guards(MODULE_TRAINING_TREE.format(kind=kind, value=value))


# --- parse_cpp_guards -------------------------------------------------------------------------


def test_parse_cpp_guards_flattens_the_tree_with_sources() -> None:
    guards = parse_cpp_guards(LAMBDA_0_0)

    assert [(g.source, g.kind) for g in guards] == [
        ("", "LAMBDA_GUARD"),
        ("", "GLOBAL_STATE"),
        ("", "TORCH_FUNCTION_MODE_STACK"),
        ("", "DEFAULT_DEVICE"),
        ("L['x']", "TENSOR_MATCH"),
        *[("L['x']", "DIMENSION_DYNAMIC_MARKING_GUARD")] * 5,
        ("L['flag']", "TRUE_MATCH"),
    ]


def test_parse_cpp_guards_splits_code_from_user_line() -> None:
    guards = parse_cpp_guards(F_1_0)
    by_kind = {g.kind: g for g in guards}

    assert by_kind["EQUALS_MATCH"] == Guard(
        source="L['n']",
        kind="EQUALS_MATCH",
        code="L['n'] == 2",
        user_line="return x * n + 1  # mp/gen/prog_guards.py:15 in f",
    )
    assert by_kind["TENSOR_MATCH"].code.startswith("check_tensor(L['x'], Tensor, DispatchKeySet(")
    assert by_kind["TENSOR_MATCH"].code.endswith("size=[4], stride=[1])")
    assert by_kind["DEFAULT_DEVICE"].user_line == (
        "_dynamo/output_graph.py:1122 in init_ambient_guards"
    )
    assert by_kind["TORCH_FUNCTION_MODE_STACK"].user_line is None


def test_parse_cpp_guards_keeps_the_global_state_json_in_the_code() -> None:
    (global_state,) = [g for g in parse_cpp_guards(LAMBDA_0_0) if g.kind == "GLOBAL_STATE"]

    assert global_state.code == f"___check_global_state() against {_GLOBAL_STATE_JSON}"
    assert global_state.source == ""


def test_parse_cpp_guards_root_level_lambda_guard_has_no_source() -> None:
    last = parse_cpp_guards(LAMBDA_0_1)[-1]

    assert last.kind == "LAMBDA_GUARD"
    assert last.source == ""
    assert last.code == "2 <= L['x'].size()[0]"
    assert last.user_line is not None
    assert "user code shown is first use of this value" in last.user_line


def test_parse_cpp_guards_nested_managers_give_the_innermost_source() -> None:
    guards = _module_guards("TRUE_MATCH", "True")

    assert [(g.source, g.kind, g.code) for g in guards] == [
        (
            "L['self']",
            "TYPE_MATCH",
            "___check_type_id(L['self'], 94651261134752), type=<class '__main__.M'>",
        ),
        ("L['self'].training", "TRUE_MATCH", "L['self'].training == True"),
        (
            "L['self']._parameters",
            "TYPE_MATCH",
            "___check_type_id(L['self']._parameters, 140230881808032), type=<class 'dict'>",
        ),
    ]
    assert (
        guards[0].user_line
        == "y = self.lin(x)  # mp/gen/prog_guards.py:9 in forward (HINT: type M)"
    )


def test_parse_cpp_guards_dict_key_and_value_managers() -> None:
    guards = parse_cpp_guards(DICT_ITEMS_TREE)

    assert [(g.source, g.code) for g in guards] == [
        ("list(dict.keys(L['d']))[0]", "list(dict.keys(L['d']))[0] == 'a'"),
        ("L['d']['a']", "L['d']['a'] == 1"),
    ]


def test_parse_cpp_guards_older_format_without_type() -> None:
    guards = parse_cpp_guards(OLD_FORMAT_TREE)

    assert [(g.source, g.kind) for g in guards] == [
        ("", "LAMBDA_GUARD"),
        ("", "DEFAULT_DEVICE"),
        ("", "GLOBAL_STATE"),
        ("", "TORCH_FUNCTION_MODE_STACK"),
        ("L['x']", "TENSOR_MATCH"),
        ("L['x']", "NO_HASATTR"),
    ]
    tensor = guards[4]
    assert tensor.user_line is None
    assert tensor.code.endswith("size=[2, 2], stride=[2, 1])")
    assert guards[5].code == "hasattr(L['x'], '_dynamo_dynamic_indices') == False"
    assert guards[2].code == "___check_global_state()"


def test_parse_cpp_guards_older_format_dict_key_and_value_managers() -> None:
    guards = parse_cpp_guards(OLD_FORMAT_DICT_TREE)

    assert [(g.source, g.kind) for g in guards] == [
        ("L['self'].training", "ID_MATCH"),
        ("list(L['self']._modules.keys())[0]", "EQUALS_MATCH"),
        ("L['self']._modules['0']", "TYPE_MATCH"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "TREE_GUARD_MANAGER:\n\nGuard latency = 3.12 us\n",
        "+- RootGuardManager\n| +- NO_TENSOR_ALIASING\n| +- KeyValueManager pair at index=1\n",
        "| | +- \n+-\n| +- lowercase: not a guard\n\t+- TAB_INDENTED: x\n",
    ],
)
def test_parse_cpp_guards_skips_what_is_not_a_leaf_guard(text: str) -> None:
    assert parse_cpp_guards(text) == []


def test_parse_cpp_guards_a_leaf_before_any_manager_has_no_source() -> None:
    text = "+- RootGuardManager\n| | +- EQUALS_MATCH: L['n'] == 2\n"

    assert parse_cpp_guards(text) == [Guard("", "EQUALS_MATCH", "L['n'] == 2", None)]


# --- categorize_guard -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # Dynamo's own failure messages (torch 2.13 recompile_reasons).
        ("tensor 'x' size mismatch at index 0. expected 4, actual 5", "size"),
        ("tensor 'x' dtype mismatch. expected Float, actual Double", "dtype"),
        ("tensor 'x' stride mismatch at index 0. expected 4, actual 1", "stride"),
        ("tensor 'x' requires_grad mismatch. expected requires_grad=0", "requires_grad"),
        ("tensor 'x' device mismatch. expected CPU, actual CUDA", "device"),
        ("tensor 'x' dispatch key set mismatch. expected DispatchKeySet(CPU), actual X", "device"),
        ("flag == True", "python_constant"),
        ("n == 2", "python_constant"),
        ("x is None", "python_constant"),
        ("len(xs) == 3", "python_constant"),
        ("GLOBAL_STATE changed: grad_mode ", "grad_mode"),
        ("GLOBAL_STATE changed: autocast ", "autocast"),
        ("self.training == True", "attribute_value"),
        ("xs[0] == 1", "attribute_value"),
        ("2 <= x.size()[0]", "size"),
        ("Eq(s0, 4)", "size"),
        ("mod.weight is deallocated", "object_id"),
        ("GLOBAL_STATE changed: default_dtype ", "other"),
        ("Unexpected recompilation: runtime guards failed", "other"),
        # Guard code from dynamo_cpp_guards_str.
        ("___check_obj_id(L['m'], 140230471621888)", "object_id"),
        ("___check_type_id(L['n'], 140230881803488), type=<class 'int'>", "object_id"),
        ("L['self'].training == True", "attribute_value"),
        ("L['self']._modules['lin'].weight == 3", "attribute_value"),
        ("L['x'].size()[0] == 4", "size"),
        ("L['x'].stride()[1] == L['x'].size()[0]", "size"),
        ("L['x'].requires_grad == True", "requires_grad"),
        ("torch.is_grad_enabled() == True", "grad_mode"),
        ("global state grad_mode changed: expected True, actual False", "grad_mode"),
    ],
)
def test_categorize_guard(text: str, category: str) -> None:
    assert categorize_guard(text) == category


@pytest.mark.parametrize(
    "code", ["L['n'] == 2", "L['flag'] == True", "L['cfg'] is None", "G['SCALE'] == 5"]
)
def test_categorize_guard_code_on_a_plain_local_is_python_constant(code: str) -> None:
    assert categorize_guard(code) == "python_constant"


def test_categorize_guard_rank_mismatch_is_size() -> None:
    assert categorize_guard("tensor 'x' rank mismatch. expected 1, actual 2") == "size"


def test_categorize_guard_always_answers_from_the_vocabulary() -> None:
    for text in ("", "???", "; ;", "L[", "tensor '' mismatch", "\n\n"):
        assert categorize_guard(text) in GUARD_CATEGORIES


# --- parse_recompile_reason -------------------------------------------------------------------

TRAINING_REASON = (
    "0/0: self.training == True                                    # if self.training:  "
    "# mp/gen/prog_guards.py:10 in forward\n"
    "User stack trace:\n"
    '  File "/tmp/gen/prog_guards.py", line 10, in forward\n'
    "    if self.training:"
)


def test_parse_recompile_reason_with_user_stack() -> None:
    (failure,) = parse_recompile_reason(TRAINING_REASON)

    assert failure.text == "self.training == True"
    assert failure.category == "attribute_value"
    assert failure.against == ["0/0"]
    assert failure.origin == "dynamo"
    assert failure.source == SourceLine(
        "/tmp/gen/prog_guards.py", 10, "forward", "if self.training:"
    )


def test_parse_recompile_reason_source_from_the_guard_comment() -> None:
    reason = (
        "1/0: n == 2                                                   # return x * n + 1  "
        "# mp/gen/prog_guards.py:15 in f"
    )

    (failure,) = parse_recompile_reason(reason)

    assert failure.text == "n == 2"
    assert failure.category == "python_constant"
    assert failure.against == ["1/0"]
    assert failure.source == SourceLine("mp/gen/prog_guards.py", 15, "f", "return x * n + 1")
    assert failure.key == ("value", "L['n']")


def test_parse_recompile_reason_tensor_failure_has_no_source() -> None:
    (failure,) = parse_recompile_reason(
        "1/1: tensor 'x' requires_grad mismatch. expected requires_grad=0"
    )

    assert failure.category == "requires_grad"
    assert failure.source is None
    assert failure.key == ("tensor", "x", "requires_grad", "")


def test_parse_recompile_reason_trailing_space_is_trimmed() -> None:
    (failure,) = parse_recompile_reason("0/1: GLOBAL_STATE changed: grad_mode ")

    assert failure.text == "GLOBAL_STATE changed: grad_mode"
    assert failure.category == "grad_mode"
    assert failure.against == ["0/1"]


def test_parse_recompile_reason_verbose_form_gives_every_failure() -> None:
    # With TORCH_LOGS=recompiles_verbose Dynamo joins all failing guards of a variant with "; ".
    reason = (
        "0/0: tensor 'x' dtype mismatch. expected Float, actual Double; "
        "tensor 'x' size mismatch at index 0. expected 4, actual 5; "
        "flag == True                                                  # return x * n  "
        "# mp/gen/prog.py:7 in f"
    )

    failures = parse_recompile_reason(reason)

    assert [(f.category, f.key) for f in failures] == [
        ("dtype", ("tensor", "x", "dtype", "")),
        ("size", ("tensor", "x", "size", "0")),
        ("python_constant", ("value", "L['flag']")),
    ]
    assert all(f.against == ["0/0"] for f in failures)
    assert failures[0].source is None
    assert failures[2].source == SourceLine("mp/gen/prog.py", 7, "f", "return x * n")


def test_parse_recompile_reason_compiled_autograd_and_attempt_prefixes() -> None:
    assert parse_recompile_reason("!0/2/1_1: n == 3")[0].against == ["!0/2/1_1"]


def test_parse_recompile_reason_without_prefix_or_text() -> None:
    (failure,) = parse_recompile_reason("n == 3")
    assert failure.against == ["?"]
    assert parse_recompile_reason("") == []
    assert parse_recompile_reason("0/0: ") == []


# --- diff_guard_sets --------------------------------------------------------------------------


def test_diff_tensor_dtype_and_size_both_reported() -> None:
    old, new = parse_cpp_guards(LAMBDA_0_0), parse_cpp_guards(LAMBDA_0_1)

    failures = diff_guard_sets(old, new, LAMBDA_0_1_SYMBOLS, "0/0")
    tensor = [f for f in failures if f.key[0] == "tensor"]

    assert [(f.text, f.category, f.key) for f in tensor] == [
        (
            "tensor 'x' dtype mismatch. expected torch.float32, actual torch.float64",
            "dtype",
            ("tensor", "x", "dtype", ""),
        ),
        (
            "tensor 'x' size mismatch at index 0. expected 4, actual 5",
            "size",
            ("tensor", "x", "size", "0"),
        ),
    ]
    assert all(f.against == ["0/0"] and f.origin == "guard_diff" for f in failures)


def test_diff_bool_argument_flip_is_reported() -> None:
    old, new = parse_cpp_guards(LAMBDA_0_0), parse_cpp_guards(LAMBDA_0_1)

    (flag,) = [
        f for f in diff_guard_sets(old, new, LAMBDA_0_1_SYMBOLS, "0/0") if f.key[0] == "value"
    ]

    assert flag.key == ("value", "L['flag']")
    assert flag.text == "L['flag'] == True (now L['flag'] == False)"


def test_diff_bool_argument_flip_is_python_constant() -> None:
    old, new = parse_cpp_guards(LAMBDA_0_0), parse_cpp_guards(LAMBDA_0_1)

    (flag,) = [
        f for f in diff_guard_sets(old, new, LAMBDA_0_1_SYMBOLS, "0/0") if f.key[0] == "value"
    ]

    assert flag.category == "python_constant"


def test_diff_source_when_dynamo_has_no_code_line() -> None:
    old, new = parse_cpp_guards(LAMBDA_0_0), parse_cpp_guards(LAMBDA_0_1)

    failures = diff_guard_sets(old, new, LAMBDA_0_1_SYMBOLS, "0/0")

    assert failures[0].source == SourceLine("<string>", 1, "<lambda>", None)


def test_diff_dynamic_size_equal_to_old_static_size_is_not_a_failure() -> None:
    old, new = parse_cpp_guards(LAMBDA_0_0), parse_cpp_guards(LAMBDA_0_1)

    failures = diff_guard_sets(old, new, {"s77": ("L['x'].size()[0]", "4")}, "0/0")

    assert [f.category for f in failures if f.key[0] == "tensor"] == ["dtype"]


def test_diff_dynamic_size_without_a_symbol_is_not_a_failure() -> None:
    old, new = parse_cpp_guards(LAMBDA_0_0), parse_cpp_guards(LAMBDA_0_1)

    failures = diff_guard_sets(old, new, {}, "0/0")

    assert [f.category for f in failures if f.key[0] == "tensor"] == ["dtype"]


def test_diff_rank_change_is_one_size_failure() -> None:
    old = parse_cpp_guards(F_1_0)
    (old_tensor,) = [line for line in F_1_0.splitlines() if "TENSOR_MATCH" in line]
    new = parse_cpp_guards(F_1_0.replace(old_tensor, F_1_3_TENSOR))
    symbols = {"s77": ("L['x'].size()[0]", "2"), "s27": ("L['x'].size()[1]", "4")}

    (rank,) = [f for f in diff_guard_sets(old, new, symbols, "1/0") if f.key[0] == "tensor"]

    assert rank.text == "tensor 'x' rank mismatch. expected 1, actual 2"
    assert rank.category == "size"
    assert rank.source == SourceLine("mp/gen/prog_guards.py", 15, "f", "return x * n + 1")


def test_diff_int_that_became_a_symbol_reports_the_new_value() -> None:
    old, new = parse_cpp_guards(F_1_0), parse_cpp_guards(F_1_1)

    (failure,) = diff_guard_sets(old, new, {"s86": ("L['n']", "5")}, "1/0")

    assert failure.text == "L['n'] == 2 (now L['n'] == 5)"
    assert failure.key == ("value", "L['n']")
    assert failure.against == ["1/0"]
    assert failure.source == SourceLine("mp/gen/prog_guards.py", 15, "f", "return x * n + 1")


def test_diff_int_that_became_a_symbol_is_python_constant() -> None:
    old, new = parse_cpp_guards(F_1_0), parse_cpp_guards(F_1_1)

    (failure,) = diff_guard_sets(old, new, {"s86": ("L['n']", "5")}, "1/0")

    assert failure.category == "python_constant"


def test_diff_int_symbol_with_the_old_value_is_not_a_failure() -> None:
    old, new = parse_cpp_guards(F_1_0), parse_cpp_guards(F_1_1)

    assert diff_guard_sets(old, new, {"s86": ("L['n']", "2")}, "1/0") == []
    assert diff_guard_sets(old, new, {}, "1/0") == []


def test_diff_global_state_grad_mode_change() -> None:
    old = parse_cpp_guards(LAMBDA_0_0)
    new = parse_cpp_guards(LAMBDA_0_0.replace('"grad_mode":true', '"grad_mode":false'))

    (failure,) = diff_guard_sets(old, new, {}, "0/1")

    assert failure.category == "grad_mode"
    assert failure.key == ("global", "grad_mode")
    assert failure.text == "global state grad_mode changed: expected True, actual False"
    assert failure.source is None


def test_diff_global_state_autocast_change() -> None:
    old = parse_cpp_guards(LAMBDA_0_0)
    new = parse_cpp_guards(LAMBDA_0_0.replace('"enabled":[false,', '"enabled":[true,'))

    (failure,) = diff_guard_sets(old, new, {}, "0/0")

    assert failure.category == "autocast"
    assert failure.key == ("global", "autocast")


def test_diff_global_state_without_json_is_ignored() -> None:
    old = parse_cpp_guards(OLD_FORMAT_TREE)

    assert diff_guard_sets(old, old, {}, "0/0") == []


def test_diff_attribute_value_flip() -> None:
    old = _module_guards("TRUE_MATCH", "True")
    new = _module_guards("FALSE_MATCH", "False")

    (failure,) = diff_guard_sets(old, new, {}, "0/0")

    assert failure.text == "L['self'].training == True (now L['self'].training == False)"
    assert failure.category == "attribute_value"
    assert failure.key == ("value", "L['self'].training")
    assert failure.source == SourceLine("mp/gen/prog_guards.py", 10, "forward", "if self.training:")


def test_diff_object_id_change() -> None:
    old = [Guard("L['m']", "ID_MATCH", "___check_obj_id(L['m'], 140230471621888)", None)]
    new = [Guard("L['m']", "ID_MATCH", "___check_obj_id(L['m'], 140230471999999)", None)]

    (failure,) = diff_guard_sets(old, new, {}, "0/0")

    assert failure.category == "object_id"
    assert failure.key == ("id", "L['m']", "ID_MATCH")


def test_diff_requires_grad_and_device() -> None:
    def tensor(device: str, requires_grad: str) -> list[Guard]:
        code = (
            "check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, "
            f"AutogradCPU), torch.float32, device={device}, requires_grad={requires_grad}, "
            "size=[4], stride=[1])"
        )
        return [Guard("L['x']", "TENSOR_MATCH", code, None)]

    failures = diff_guard_sets(tensor("None", "False"), tensor("0", "True"), {}, "0/0")

    assert [(f.category, f.key) for f in failures] == [
        ("device", ("tensor", "x", "device", "")),
        ("requires_grad", ("tensor", "x", "requires_grad", "")),
    ]


def test_diff_identical_guard_sets_have_no_failures() -> None:
    guards = parse_cpp_guards(LAMBDA_0_0)

    assert diff_guard_sets(guards, guards, {}, "0/0") == []


# --- merge_failed_guards ----------------------------------------------------------------------


def test_merge_dedupes_dynamo_text_with_the_diff_equivalent() -> None:
    dynamo = parse_recompile_reason("0/0: tensor 'x' dtype mismatch. expected Float, actual Double")
    diff = diff_guard_sets(
        parse_cpp_guards(LAMBDA_0_0), parse_cpp_guards(LAMBDA_0_1), LAMBDA_0_1_SYMBOLS, "0/0"
    )

    merged = merge_failed_guards(diff + dynamo)

    dtype = [m for m in merged if m.category == "dtype"]
    assert len(dtype) == 1
    assert dtype[0].text == "tensor 'x' dtype mismatch. expected Float, actual Double"
    assert dtype[0].origin == "dynamo"
    assert "size" in {m.category for m in merged}


def test_merge_collects_against_and_fills_the_source() -> None:
    reasons = [
        "1/1: tensor 'x' requires_grad mismatch. expected requires_grad=0",
        "1/0: tensor 'x' requires_grad mismatch. expected requires_grad=0",
    ]
    dynamo = [f for reason in reasons for f in parse_recompile_reason(reason)]
    source = SourceLine("mp/gen/prog_guards.py", 15, "f", "return x * n + 1")
    diff = FailedGuard(
        "tensor 'x' requires_grad mismatch. expected False, actual True",
        "requires_grad",
        source,
        ["1/0", "1/2"],
        "guard_diff",
        ("tensor", "x", "requires_grad", ""),
    )

    (merged,) = merge_failed_guards([diff, *dynamo])

    assert merged.against == ["1/0", "1/1", "1/2"]
    assert merged.origin == "dynamo"
    assert merged.source == source


def test_merge_python_constant_dynamo_text_with_diff() -> None:
    dynamo = parse_recompile_reason(
        "1/0: n == 2                                                   # return x * n + 1  "
        "# mp/gen/prog_guards.py:15 in f"
    )
    diff = diff_guard_sets(
        parse_cpp_guards(F_1_0), parse_cpp_guards(F_1_1), {"s86": ("L['n']", "5")}, "1/0"
    )

    (merged,) = merge_failed_guards(dynamo + diff)

    assert merged.text == "n == 2"
    assert merged.category == "python_constant"


def test_merge_keeps_distinct_failures_and_does_not_mutate_inputs() -> None:
    failures = [
        FailedGuard("a == 1", "python_constant", None, ["0/0"]),
        FailedGuard("b == 1", "python_constant", None, ["0/0"]),
        FailedGuard("a == 1", "python_constant", None, ["0/1"]),
    ]

    merged = merge_failed_guards(failures)

    assert [(m.text, m.against) for m in merged] == [
        ("a == 1", ["0/0", "0/1"]),
        ("b == 1", ["0/0"]),
    ]
    assert failures[0].against == ["0/0"]


def test_merge_dedupes_global_state_text_with_the_diff() -> None:
    dynamo = parse_recompile_reason("0/0: GLOBAL_STATE changed: grad_mode ")
    old = parse_cpp_guards(LAMBDA_0_0)
    new = parse_cpp_guards(LAMBDA_0_0.replace('"grad_mode":true', '"grad_mode":false'))

    merged = merge_failed_guards(dynamo + diff_guard_sets(old, new, {}, "0/0"))

    assert len(merged) == 1


def test_merge_dedupes_attribute_text_with_the_diff() -> None:
    dynamo = parse_recompile_reason(TRAINING_REASON)
    diff = diff_guard_sets(
        _module_guards("TRUE_MATCH", "True"), _module_guards("FALSE_MATCH", "False"), {}, "0/0"
    )

    merged = merge_failed_guards(dynamo + diff)

    assert len(merged) == 1


# --- nearest_changes --------------------------------------------------------------------------


def test_the_nearest_variant_is_one_in_the_same_state() -> None:
    """A decode step that recompiles because the KV cache's strides changed (Llama generate()
    after a dynamic prefill, torch 2.13): against the prefill it differs in one flag, against
    the earlier decode step in two strides. The decode step is the nearest: the strides are
    the news, the flag is the prefill/decode state each variant serves by design."""
    from pt2doctor.analysis.recompiles.changes import nearest_changes
    from pt2doctor.trace.records import CompileId
    from pt2doctor.trace.types import CompileRecord

    prefill, decode = CompileRecord(CompileId(0, 0), "s"), CompileRecord(CompileId(0, 1), "s")
    record = CompileRecord(CompileId(0, 2), "s")
    record.recompile_reasons = [
        "0/1: tensor 'k' stride mismatch at index 2. expected 16, actual 32; "
        "tensor 'v' stride mismatch at index 2. expected 16, actual 32",
        "0/0: cache.ready == False                                # if not cache.ready:  "
        "# prog.py:7 in f",
    ]
    against, changes = nearest_changes(record, [prefill, decode])
    assert against == "0/1"
    assert [(c.kind, c.old, c.new) for c in changes] == [("stride", "16", "32")] * 2
    # Without the stride news, the flag is all that differs from the prefill: it is nearest.
    record.recompile_reasons = [
        "0/0: cache.ready == False  # if not cache.ready:  # prog.py:7 in f"
    ]
    assert nearest_changes(record, [prefill, decode])[0] == "0/0"
