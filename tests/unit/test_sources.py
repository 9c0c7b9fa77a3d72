"""Guard sources rewritten as the user's expressions (analysis/recompiles/sources.py) and the folding of
changes that only follow another change (analysis/recompiles/changes.py)."""

from __future__ import annotations

import pytest

from pt2doctor.analysis.recompiles.changes import SourceChange, fold_changes
from pt2doctor.analysis.recompiles.sources import human_source, user_expr


@pytest.mark.parametrize(
    ("raw", "human"),
    [
        (
            "L['self']._modules['transformer']._modules['h']._modules['0'].attn",
            "self.transformer.h[0].attn",
        ),
        ("L['kwargs']['x']", "kwargs['x']"),
        ("kwargs['x']", "kwargs['x']"),
        ("G['name']", "name"),
        ("L['x'].size()[1]", "x.shape[1]"),
        ("L['x'].stride()[0]", "x.stride()[0]"),
        ("L['self']._parameters['weight']", "self.weight"),
        ("L['self']._buffers['running_mean']", "self.running_mean"),
        ("G['__builtins_dict___2']['super']", "super"),
        ("G['__import_torch_dot_nn_dot_modules_dot_module']._global_hooks",
         "torch.nn.modules.module._global_hooks"),
        ("L['self'].__dict__['_buffers']", "self._buffers"),
        # A Hugging Face ModelOutput read by position (T5's encoder_outputs[0], torch 2.13).
        ("dict.__getitem__(L['kwargs']['encoder_outputs'], "
         "list(dict.keys(L['kwargs']['encoder_outputs']))[0]).size()[1]",
         "list(kwargs['encoder_outputs'].values())[0].shape[1]"),
    ],
)  # fmt: skip
def test_human_source(raw: str, human: str) -> None:
    assert human_source(raw) == human


def test_both_spellings_of_one_source_are_equal() -> None:
    assert human_source("L['kwargs']['input_ids']") == human_source("kwargs['input_ids']")


def test_index_pattern_keeps_dims() -> None:
    expr = user_expr("L['kwargs']['cache']._modules['layers']._modules['1'].keys.size()[2]")
    assert expr.text == "kwargs['cache'].layers[1].keys.shape[2]"
    assert expr.pattern == "kwargs['cache'].layers[*].keys.shape[2]"
    assert expr.unit == "layers"
    assert user_expr("L['self']._modules['h']._modules['0'].attn").unit == "items"


def test_argument_and_dim() -> None:
    """The parts of an expression are worked out once, from torch's source."""
    ids = user_expr("L['kwargs']['input_ids'].size()[1]")
    assert (ids.tensor, ids.dim, ids.argument, ids.keyword, ids.direct) == (
        "kwargs['input_ids']", 1, "input_ids", True, True,
    )  # fmt: skip
    assert ids.call_form == "input_ids.shape[1]"
    assert (user_expr("L['x']").argument, user_expr("L['x']").tensor) == ("x", None)
    nested = user_expr("L['self']._modules['cache'].keys.size()[2]")
    assert (nested.tensor, nested.dim, nested.direct) == ("self.cache.keys", 2, False)
    assert user_expr("L['self'].num_updates").dim is None
    assert user_expr("L['x'].stride()[0]").stride_of == "x"


def test_stride_that_moved_with_its_size_is_folded() -> None:
    changes = fold_changes(
        [
            SourceChange(user_expr("x.shape[1]"), "size", "8", "1"),
            SourceChange(user_expr("x.stride()[0]"), "stride", "8", "1"),
            SourceChange(user_expr("y.stride()[0]"), "stride", "4", "1"),
        ],
        dynamic=set(),
    )
    assert [(c.source, c.folded) for c in changes] == [
        ("x.shape[1]", ["x.stride()[0]"]),
        ("y.stride()[0]", []),
    ]


def test_training_of_submodules_is_one_change() -> None:
    flips = [
        SourceChange(user_expr(f"self.h[{i}].{leaf}.training"), "flag", "False", "True")
        for i in range(3)
        for leaf in ("attn", "mlp")
    ]
    (change,) = fold_changes(flips, dynamic=set())
    assert (change.source, change.old, change.new, change.count) == ("self.training", "False",
                                                                     "True", 6)  # fmt: skip
    assert change.label == "self.training (6 submodules)"


def test_same_change_at_every_index_collapses_and_different_ones_do_not() -> None:
    changes = fold_changes(
        [
            SourceChange(user_expr("cache.layers[0].keys.shape[2]"), "size", "8", "9"),
            SourceChange(user_expr("cache.layers[1].keys.shape[2]"), "size", "8", "9"),
            SourceChange(user_expr("cache.layers[2].keys.shape[2]"), "size", "8", "10"),
        ],
        dynamic={"cache.layers[0].keys.shape[2]", "cache.layers[1].keys.shape[2]"},
    )
    labels = sorted((c.label, c.dynamic) for c in changes)
    assert labels == [
        ("cache.layers[*].keys.shape[2] (2 layers)", True),
        ("cache.layers[2].keys.shape[2]", False),
    ]


def test_dynamo_and_guard_diff_spellings_merge_keeping_both_values() -> None:
    changes = fold_changes(
        [
            SourceChange(user_expr("self.n"), "value", "0", None, hint="make it a tensor"),
            SourceChange(user_expr("self.n"), "value", "0", "1"),
        ],
        dynamic=set(),
    )
    assert [(c.old, c.new, c.hint) for c in changes] == [("0", "1", "make it a tensor")]


def test_attributes_of_a_replaced_object_follow_it() -> None:
    changes = fold_changes(
        [
            SourceChange(user_expr("fn"), "object_identity", "an object", "another object"),
            SourceChange(
                user_expr("fn.__closure__[1].cell_contents.__code__"), "object_identity", "a", "b"
            ),
        ],
        dynamic=set(),
    )
    assert [(c.source, c.folded) for c in changes] == [
        ("fn", ["fn.__closure__[1].cell_contents.__code__"])
    ]
