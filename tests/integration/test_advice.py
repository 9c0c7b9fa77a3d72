"""Every fix pt2doctor's advice names, applied to a small program on the installed torch.

One case per claim (issue 13): the program breaks or recompiles as pt2doctor says, the advice
pt2doctor gives for it (from a real ``pt2doctor.watch()`` capture, or the advice constant for
recompiles) names the fix, and applying that fix makes the break or recompile disappear
(``fullgraph=True`` compiles only a program without a break; a counting backend counts the
compiles). ``backend="eager"``: Dynamo-level behaviour only, ~0.1-1 s per case.
"""

from __future__ import annotations

import logging
import warnings
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import pt2doctor  # noqa: E402
from pt2doctor.analysis.breaks.advice import MARK_DYNAMIC_ADVICE, RECOMPILE_ADVICE  # noqa: E402
from pt2doctor.analysis.ranks.findings import RANK_RECOMPILE_ADVICE  # noqa: E402

pytestmark = pytest.mark.torch_run

log = logging.getLogger("pt2doctor.test_advice")


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def break_row(fn: Callable[..., Any], *args: Any, dynamic: bool | None = None) -> dict[str, Any]:
    """The one graph-break row pt2doctor reports for ``fn(*args)`` compiled (eager backend)."""
    compiled = torch.compile(fn, backend="eager", dynamic=dynamic)
    with pt2doctor.watch() as w:
        compiled(*args)
    (row,) = w.report()["graph_breaks"]
    torch._dynamo.reset()
    return row


def compiles_whole(fn: Callable[..., Any], *args: Any, **config: Any) -> bool:
    """True when ``fn`` compiles without a graph break under the given Dynamo config, by torch's
    own break counter (not ``fullgraph=True``: in 2.13 it captures ``.item()`` and
    value-dependent shapes by itself, so it cannot show what a config changes)."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    with torch._dynamo.config.patch(**config):
        torch.compile(fn, backend="eager")(*args)
    return not sum(torch._dynamo.utils.counters["graph_break"].values())


class CountingBackend:
    """A backend that counts the graphs Dynamo hands it (one per compile without breaks)."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        self.graphs += 1
        return gm.forward


# --- print, warnings and logging --------------------------------------------------------------


def logs_with_logger(x):
    y = x + 1
    log.warning("pt2doctor test_advice: logger")
    return y * 2


def test_logger_methods_only_ignore_logging_functions_removes_the_break() -> None:
    row = break_row(logs_with_logger, torch.ones(3))
    assert row["category"] == "print_or_logging"
    assert "ignore_logging_functions" in row["advice"]
    assert "has no effect on Logger methods" in row["advice"]
    assert not compiles_whole(logs_with_logger, torch.ones(3))
    reorder = {log.warning}
    assert not compiles_whole(
        logs_with_logger, torch.ones(3), reorderable_logging_functions=reorder
    )
    assert compiles_whole(logs_with_logger, torch.ones(3), ignore_logging_functions={log.warning})


def warns(x):
    y = x + 1
    warnings.warn("pt2doctor test_advice: warning", stacklevel=1)
    return y * 2


@pytest.mark.filterwarnings("ignore:pt2doctor test_advice")
def test_warnings_warn_reordered_keeps_the_warning_ignored_drops_it() -> None:
    row = break_row(warns, torch.ones(3))
    assert row["category"] == "print_or_logging"
    assert (
        "Adding warnings.warn to torch._dynamo.config.reorderable_logging_functions"
        in (row["advice"])
    )
    assert "custom op" not in row["advice"]
    for config, kept in (("reorderable_logging_functions", 1), ("ignore_logging_functions", 0)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert compiles_whole(warns, torch.ones(3), **{config: {warnings.warn}})
        assert len(caught) == kept, config


def prints_a_tensor(x):
    y = x + 1
    print("pt2doctor test_advice: y =", y)
    return y * 2


def test_print_of_tensors_is_reordered(capsys: pytest.CaptureFixture[str]) -> None:
    row = break_row(prints_a_tensor, torch.ones(3))
    assert "Adding print to torch._dynamo.config.reorderable_logging_functions" in row["advice"]
    capsys.readouterr()
    assert compiles_whole(prints_a_tensor, torch.ones(3), reorderable_logging_functions={print})
    assert "pt2doctor test_advice: y =" in capsys.readouterr().out  # still printed


def prints_a_size(x):
    y = x + 1
    print("pt2doctor test_advice: n =", x.shape[0])
    return y * 2


def test_print_of_an_int_carries_the_symint_caveat() -> None:
    row = break_row(prints_a_size, torch.ones(5))
    assert "(int, str)" in row["advice"] and "gb0296" in row["advice"]
    # Static: the int is a constant and reordering works. Dynamic: a SymInt, refused (gb0296).
    assert compiles_whole(prints_a_size, torch.ones(5), reorderable_logging_functions={print})
    torch._dynamo.reset()
    with torch._dynamo.config.patch(reorderable_logging_functions={print}):
        compiled = torch.compile(prints_a_size, backend="eager", fullgraph=True, dynamic=True)
        with pytest.raises(torch._dynamo.exc.Unsupported, match="gb0296"):
            compiled(torch.ones(5))


def prints_without_size(x):
    y = x + 1
    print("pt2doctor test_advice: y =", y)
    return y * 2


def test_a_refused_reorder_is_explained_and_printing_the_size_outside_fixes_it() -> None:
    with torch._dynamo.config.patch(reorderable_logging_functions={print}):
        row = break_row(prints_a_size, torch.ones(5), dynamic=True)
        assert row["gb_id"] == "gb0296" and row["category"] == "print_or_logging"
        assert "Print that value outside the compiled region" in row["advice"]
        torch._dynamo.utils.counters.clear()
        compiled = torch.compile(prints_without_size, backend="eager", dynamic=True)
        y = compiled(torch.ones(5))
        print("pt2doctor test_advice: n =", y.shape[0])  # the size, printed outside
        assert not sum(torch._dynamo.utils.counters["graph_break"].values())


def prints_unless_compiling(x):
    y = x + 1
    if not torch.compiler.is_compiling():
        print("pt2doctor test_advice: eager only")
    return y * 2


def test_is_compiling_guard_removes_the_break_and_the_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    advice = pt2doctor.analysis.breaks.advice.BREAK_ADVICE["print_or_logging"]
    assert "torch.compiler.is_compiling()" in advice and "skips the call while compiled" in advice
    capsys.readouterr()
    assert compiles_whole(prints_unless_compiling, torch.ones(3))
    assert "eager only" not in capsys.readouterr().out


# --- data-dependent values and shapes -------------------------------------------------------


def branches_on_a_value(x):
    if x.sum().item() > 0:
        return x + 1
    return x - 1


def branch_with_where(x):
    return torch.where(x.sum() > 0, x + 1, x - 1)


def branch_with_cond(x):
    return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))


def test_a_branch_on_item_needs_where_or_cond_not_capture_scalar_outputs() -> None:
    row = break_row(branches_on_a_value, torch.ones(3))
    assert row["category"] == "data_dependent_scalar"
    assert "capture_scalar_outputs does not help" in row["advice"]
    assert "torch.where" in row["advice"] and "torch.cond" in row["advice"]
    # The config keeps .item() in the graph, but the `if` on it still splits the function.
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        backend = CountingBackend()
        torch.compile(branches_on_a_value, backend=backend)(torch.ones(3))
    assert backend.graphs == 2
    for fixed in (branch_with_where, branch_with_cond):
        assert compiles_whole(fixed, torch.ones(3)), fixed.__name__
        torch.testing.assert_close(fixed(torch.ones(3)), branches_on_a_value(torch.ones(3)))


def scales_by_a_value(x):
    return x * x.sum().item()


def test_an_item_feeding_tensor_ops_is_kept_by_capture_scalar_outputs() -> None:
    row = break_row(scales_by_a_value, torch.ones(3))
    assert "capture_scalar_outputs = True keeps it in the graph" in row["advice"]
    assert not compiles_whole(scales_by_a_value, torch.ones(3))
    assert compiles_whole(scales_by_a_value, torch.ones(3), capture_scalar_outputs=True)


def masks(x):
    return x[x > 0].sum()


def masks_with_where(x):
    return torch.where(x > 0, x, 0).sum()


def test_a_boolean_mask_is_kept_by_where_or_dynamic_output_shapes() -> None:
    x = torch.tensor([1.0, -2.0, 3.0])
    row = break_row(masks, x)
    assert row["category"] == "data_dependent_shape"
    assert "torch.where(mask, x, 0)" in row["advice"]
    assert "capture_dynamic_output_shape_ops = True" in row["advice"]
    assert not compiles_whole(masks, x)
    assert compiles_whole(masks, x, capture_dynamic_output_shape_ops=True)
    assert compiles_whole(masks_with_where, x)
    torch.testing.assert_close(masks_with_where(x), masks(x))


# --- C extensions and Python side effects ------------------------------------------------------


def checksums(x):
    return x + zlib.crc32(x.numpy().tobytes())


@torch.library.custom_op("pt2doctor_test_advice::crc32", mutates_args=())
def crc32_op(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor(zlib.crc32(x.numpy().tobytes()), dtype=x.dtype)


@crc32_op.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(())


def checksums_as_custom_op(x):
    return x + crc32_op(x)


def test_a_c_extension_wrapped_as_a_custom_op_stays_in_the_graph() -> None:
    x = torch.ones(3)
    row = break_row(checksums, x)
    assert row["category"] == "unsupported_builtin_or_c_extension"
    assert "torch.library.custom_op" in row["advice"]
    assert not compiles_whole(checksums, x)
    assert compiles_whole(checksums_as_custom_op, x)
    torch.testing.assert_close(checksums_as_custom_op(x), checksums(x))


COUNTER = 0
STATE = type("State", (), {"calls": 0})()
SEEN: list[float] = []


def mutates_python_state(x):
    global COUNTER
    COUNTER += 1
    STATE.calls += 1
    SEEN.append(1.0)
    return sum(t * 2 for t in (x, x + 1))


def test_plain_python_side_effects_are_replayed_without_a_break() -> None:
    """What the python_side_effect paragraph says torch 2.13 replays: globals, plain-object
    attributes, list appends, generator loops; the mutations happen as in eager."""
    advice = pt2doctor.analysis.breaks.advice.BREAK_ADVICE["python_side_effect"]
    assert "replays most Python side effects" in advice
    assert compiles_whole(mutates_python_state, torch.ones(3))
    assert (COUNTER, STATE.calls, len(SEEN)) == (1, 1, 1)


def mutates_inside_cond(x):
    def true_fn(t):
        SEEN.append(2.0)
        return t + 1

    return torch.cond(x.sum() > 0, true_fn, lambda t: t - 1, (x,))


def test_a_side_effect_inside_a_higher_order_op_is_refused() -> None:
    assert (
        "inside a higher-order op"
        in pt2doctor.analysis.breaks.advice.BREAK_ADVICE["python_side_effect"]
    )
    with pytest.raises(Exception, match="side effect"):
        torch.compile(mutates_inside_cond, backend="eager")(torch.ones(3))
    assert compiles_whole(branch_with_cond, torch.ones(3))  # the branch returns, no mutation


# --- recompiles: mark_dynamic and uneven last batches -------------------------------------------


def doubles(x):
    return x * 2


def special_cases_four(x):
    if x.shape[0] == 4:
        return x + 1
    return x * 2


def compile_count(fn: Callable[..., Any], sizes: list[int], mark: Any = None) -> int:
    torch._dynamo.reset()
    backend = CountingBackend()
    compiled = torch.compile(fn, backend=backend)
    for n in sizes:
        x = torch.ones(n)
        if mark is not None:
            mark(x, 0)
        compiled(x)
    return backend.graphs


def test_mark_dynamic_raises_when_the_code_specializes_maybe_mark_dynamic_does_not() -> None:
    assert MARK_DYNAMIC_ADVICE in RECOMPILE_ADVICE["size"]
    assert "raises ConstraintViolationError" in MARK_DYNAMIC_ADVICE
    assert compile_count(doubles, [4, 5, 6, 7]) == 2  # static, then one dynamic recompile
    assert compile_count(doubles, [4, 5, 6, 7], torch._dynamo.maybe_mark_dynamic) == 1
    with pytest.raises(torch.fx.experimental.symbolic_shapes.ConstraintViolationError):
        compile_count(special_cases_four, [4, 5], torch._dynamo.mark_dynamic)
    assert compile_count(special_cases_four, [4, 5, 6], torch._dynamo.maybe_mark_dynamic) == 2


def test_sizes_0_1_and_outside_min_max_still_recompile() -> None:
    assert "Sizes 0 and 1, and sizes outside mark_dynamic's min/max, still recompile" in (
        MARK_DYNAMIC_ADVICE
    )
    assert compile_count(doubles, [4, 5], torch._dynamo.mark_dynamic) == 1
    assert compile_count(doubles, [4, 5, 1], torch._dynamo.mark_dynamic) == 2
    torch._dynamo.reset()
    backend = CountingBackend()
    compiled = torch.compile(doubles, backend=backend)
    first = torch.ones(4)
    torch._dynamo.mark_dynamic(first, 0, min=2, max=16)
    for x in (first, torch.ones(5), torch.ones(32)):
        compiled(x)
    assert backend.graphs == 2  # 32 is outside [2, 16]


def batch_sizes(sampler_drop_last: bool, loader_drop_last: bool) -> list[list[int]]:
    """Batch sizes per rank for 22 samples on 2 ranks, batch size 4."""
    data = torch.utils.data.TensorDataset(torch.arange(22.0))
    sizes = []
    for rank in range(2):
        sampler = torch.utils.data.distributed.DistributedSampler(
            data, num_replicas=2, rank=rank, shuffle=False, drop_last=sampler_drop_last
        )
        loader = torch.utils.data.DataLoader(
            data, batch_size=4, sampler=sampler, drop_last=loader_drop_last
        )
        sizes.append([len(batch) for (batch,) in loader])
    return sizes


def test_an_uneven_last_batch_is_dropped_by_the_dataloader_not_the_sampler() -> None:
    assert "DataLoader(drop_last=True)" in RANK_RECOMPILE_ADVICE
    assert "DistributedSampler(drop_last=True)" not in RANK_RECOMPILE_ADVICE
    assert batch_sizes(True, False) == [[4, 4, 3], [4, 4, 3]]  # the sampler's drop_last: no help
    assert batch_sizes(False, True) == [[4, 4], [4, 4]]
    for loader_drop_last, graphs in ((False, 2), (True, 1)):
        torch._dynamo.reset()
        backend = CountingBackend()
        step = torch.compile(doubles, backend=backend)
        for size in batch_sizes(False, loader_drop_last)[0]:
            step(torch.ones(size))
        assert backend.graphs == graphs, loader_drop_last
