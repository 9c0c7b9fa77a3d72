"""The recompile fixes fire on their evidence only (analysis/recompiles/fixes.py), and the outlook
rules (analysis/recompiles/outlook.py) on hand-built changes."""

from __future__ import annotations

from pt2doctor.analysis.recompiles.changes import SourceChange
from pt2doctor.analysis.recompiles.fixes import (
    hf_generate_pattern,
    recompile_candidates,
    recompile_fixes,
)
from pt2doctor.analysis.recompiles.ledger import FrameEntry
from pt2doctor.analysis.recompiles.outlook import (
    FrameExplanation,
    Outlook,
    RecompileExplanation,
    Varying,
)
from pt2doctor.analysis.recompiles.sources import user_expr


def explanation(*changes: list[SourceChange], varying: list[Varying] | None = None,
                bounded: bool | None = True) -> FrameExplanation:  # fmt: skip
    items = [RecompileExplanation(f"0/{i + 1}", f"0/{i}", list(c)) for i, c in enumerate(changes)]
    return FrameExplanation(items, None, [], Outlook(bounded, "", varying or []))


def test_generate_pattern_needs_both_the_decode_step_and_the_cache_filling() -> None:
    decode = SourceChange(user_expr("kwargs['input_ids'].shape[1]"), "size", "8", "1")
    filled = SourceChange(
        user_expr("kwargs['cache'].layers[*].is_initialized"), "flag", "False", "True"
    )
    assert hf_generate_pattern(explanation([decode, filled]))
    assert not hf_generate_pattern(explanation([decode]))  # a shorter batch, no cache
    assert not hf_generate_pattern(explanation([filled]))
    longer = SourceChange(user_expr("kwargs['input_ids'].shape[1]"), "size", "8", "12")
    assert not hf_generate_pattern(explanation([longer, filled]))


def test_generate_on_an_encoder_decoder_model_is_recognised_by_its_cache() -> None:
    """T5 generate() (transformers 4.5x, torch 2.13): the decoder input is one token long from
    the first step, so only the cache says it: EncoderDecoderCache.is_updated and the
    self-attention layers become initialized in one recompile."""
    updated = SourceChange(
        user_expr("kwargs['cache'].is_updated[*]"), "flag", "False", "True", count=2
    )
    filled = SourceChange(
        user_expr("kwargs['cache'].self_attention_cache.layers[*].is_initialized"),
        "flag",
        "False",
        "True",
    )
    t5 = explanation([updated, filled])
    assert hf_generate_pattern(t5) == "encoder_decoder"
    fix = recompile_fixes(t5)[0]
    assert 'cache_implementation="static"' in fix and 'padding="max_length"' in fix
    assert "two variants in all" in fix
    # A decoder-only model's cache filling, with no encoder anywhere: not this pattern.
    plain = SourceChange(
        user_expr("kwargs['cache'].layers[*].is_initialized"), "flag", "False", "True"
    )
    assert hf_generate_pattern(explanation([plain])) is None
    # Llama's prefill then decode stays the decoder pattern.
    decode = SourceChange(user_expr("kwargs['input_ids'].shape[1]"), "size", "8", "1")
    assert hf_generate_pattern(explanation([decode, plain])) == "decoder"


def test_a_size_that_went_dynamic_names_the_argument_and_dim() -> None:
    row = Varying("x.shape[1]", "size", ["4", "5"], True, 1, expr=user_expr("x.shape[1]"))
    size = SourceChange(user_expr("x.shape[1]"), "size", "4", "5", dynamic=True)
    (fix,) = recompile_candidates(explanation([size], varying=[row]))
    assert "torch._dynamo.maybe_mark_dynamic(x, 1)" in fix.text
    assert "sizes 0 and 1" in fix.text
    assert fix.application is not None and fix.application.marks == (("x", 1),)


def test_a_size_that_changed_with_a_flag_gets_no_mark_the_flag_would_still_recompile() -> None:
    """tests/programs/multi_guard.py: --try-fixes measured the mark change nothing."""
    rows = [Varying("x.shape[0]", "size", ["4", "5"], True, 1, expr=user_expr("x.shape[0]")),
            Varying("flag", "flag", ["True", "False"], False, 1)]  # fmt: skip
    changes = [SourceChange(user_expr("x.shape[0]"), "size", "4", "5", dynamic=True),
               SourceChange(user_expr("flag"), "flag", "True", "False")]  # fmt: skip
    fixes = recompile_fixes(explanation(changes, varying=rows))
    assert not any("maybe_mark_dynamic" in fix for fix in fixes)
    assert fixes[0].startswith("flag = True / False: ")  # pre-warm each state


def test_a_first_size_of_one_says_the_mark_alone_changes_nothing() -> None:
    row = Varying("x.shape[0]", "size", ["1", "2"], True, 1, expr=user_expr("x.shape[0]"))
    size = SourceChange(user_expr("x.shape[0]"), "size", "1", "2", dynamic=True)
    (fix,) = recompile_candidates(explanation([size], varying=[row]))
    assert "The first call had size 1" in fix.text and "changes nothing" in fix.text
    assert fix.application is not None
    assert fix.application.config == (
        ("torch.fx.experimental._config.backed_size_oblivious", True),
    )


def test_an_int_argument_that_went_dynamic_is_not_called_baked_in() -> None:
    row = Varying("n", "value", ["2", "3"], True, 1)
    fixes = recompile_fixes(explanation([], varying=[row]))
    assert not any("baked" in fix for fix in fixes)
    assert fixes and fixes[0].startswith("Nothing to fix: n became dynamic")


def test_a_counter_on_self_gets_the_nn_module_config() -> None:
    row = Varying("self.step", "value", ["0", "1", "2"], False, 2)
    fixes = recompile_fixes(explanation([], varying=[row], bounded=False))
    assert "allow_unspec_int_on_nn_module = True" in fixes[0]


def test_a_string_constant_is_not_called_a_counter() -> None:
    row = Varying("mode", "value", ["'a'", "'b'", "'c'"], False, 2)
    (fix,) = recompile_fixes(explanation([], varying=[row], bounded=False))
    assert "allow_unspec_int_on_nn_module" not in fix
    assert "Pass it as a tensor" in fix


def test_a_stride_that_changed_once_is_a_second_layout_bounded_with_one_fix() -> None:
    """Llama generate() after a dynamic prefill (torch 2.13): the decode step recompiled for
    the KV cache's strides alone. Two layouts are bounded, and one fix names both tensors."""
    from pt2doctor.analysis.recompiles.ledger import FrameEntry
    from pt2doctor.analysis.recompiles.outlook import outlook

    keys = SourceChange(user_expr("cache.keys.stride()[2]"), "stride", "16", "32")
    values = SourceChange(user_expr("cache.values.stride()[2]"), "stride", "16", "32")
    frame = FrameEntry("s", 0, "forward", "/app/model.py", 3)
    look = outlook(frame, [RecompileExplanation("0/1", "0/0", [keys, values])], 8)
    assert look.bounded is True
    assert "a second memory layout (cache.keys.stride()[2]: 16 / 32" in look.reason
    fixes = recompile_fixes(
        FrameExplanation([RecompileExplanation("0/1", "0/0", [keys, values])], None, [], look)
    )
    (fix,) = [f for f in fixes if "layout" in f]
    assert fix.startswith("cache.keys.stride()[2]: 16 → 32, cache.values.stride()[2]: 16 → 32")
    assert ".contiguous()" in fix
    # A stride that took a new value at every one of two recompiles is not a second layout.
    again = SourceChange(user_expr("cache.keys.stride()[2]"), "stride", "32", "64")
    twice = [
        RecompileExplanation("0/1", "0/0", [keys]),
        RecompileExplanation("0/2", "0/1", [again]),
    ]
    assert outlook(frame, twice, 8).bounded is False


def test_the_findings_evidence_names_every_recompile_before_the_second_change_of_one() -> None:
    """Views show the first few evidence lines: each recompile's first change comes first, so
    a decode step's layout change is not pushed out by the prefill's three changes."""
    from pt2doctor.analysis.findings.trace_findings import _recompile_finding
    from pt2doctor.analysis.recompiles.ledger import CompileEntry, FrameEntry
    from pt2doctor.trace.records import CompileId
    from pt2doctor.trace.types import CompileRecord

    prefill = [
        SourceChange(user_expr("input_ids.shape[1]"), "size", "5", "1"),
        SourceChange(user_expr("position_ids.shape[1]"), "size", "5", "1"),
        SourceChange(user_expr("cache.ready"), "flag", "False", "True"),
    ]
    layout = [SourceChange(user_expr("cache.keys.stride()[2]"), "stride", "16", "32")]
    items = [
        RecompileExplanation("0/1", "0/0", prefill),
        RecompileExplanation("0/2", "0/1", layout),
    ]
    compiles = [
        CompileEntry(
            CompileRecord(CompileId(0, i), "s"), "first_compile" if i == 0 else "recompile"
        )
        for i in range(3)
    ]
    frame = FrameEntry("s", 0, "forward", "/app/model.py", 3, compiles=compiles)
    finding = _recompile_finding(frame, FrameExplanation(items, None, [], Outlook(True, "ok")))
    assert finding is not None
    assert [line.split(":")[0] for line in finding.evidence[1:]] == [
        "0/1 vs 0/0",
        "0/2 vs 0/1",
        "0/1 vs 0/0",
        "0/1 vs 0/0",
    ]


def test_the_flags_fix_names_each_flag_with_its_values_once() -> None:
    """T5 generate(): a collapsed source already ends in ``(2 items)``; its values do not get a
    second pair of parentheses."""
    rows = [
        Varying("kwargs['cache'].is_updated[*] (2 items)", "flag", ["False", "True"], False, 1),
        Varying("grad mode", "grad_mode", ["True", "False"], False, 1),
    ]
    (fix,) = recompile_fixes(explanation([], varying=rows))
    assert fix.startswith(
        "kwargs['cache'].is_updated[*] (2 items) = False / True, grad mode = True / False: "
    )
    assert "grad on / torch.no_grad()" in fix


def test_the_flags_fix_does_not_call_every_variant_a_state_when_sizes_went_dynamic() -> None:
    """T5 generate(): 6 variants, 2 flags (4 states) and sizes that became dynamic."""
    rows = [
        Varying("cache.is_updated[*] (2 items)", "flag", ["False", "True"], False, 1),
        Varying("cache.layers[*].is_initialized (2 layers)", "flag", ["False", "True"], False, 1),
        Varying("cache.layers[*].keys.shape[2] (2 layers)", "size", ["1", "2"], True, 1),
    ]
    items = [RecompileExplanation(f"0/{i + 1}", f"0/{i}", []) for i in range(5)]
    from pt2doctor.analysis.recompiles.outlook import VariantRow

    variants = [VariantRow(f"0/{i}", {}, [], None, None) for i in range(6)]
    look = Outlook(True, "", rows)
    (fix,) = recompile_fixes(FrameExplanation(items, None, variants, look))
    assert "at most 4 states by design" in fix and "1 value that became dynamic" in fix
    assert "6 variants by design" not in fix
    # As many variants as states: one per state.
    (fix,) = recompile_fixes(FrameExplanation(items[:3], None, variants[:4], look))
    assert "4 variants by design, one per state" in fix


def test_a_title_with_an_unknown_bound_names_what_changed_once() -> None:
    """Not "2 variant(s): python_constant x1": the value, by the user's name."""
    from pt2doctor.analysis.findings.trace_findings import _recompile_title
    from pt2doctor.analysis.recompiles.ledger import CompileEntry, FrameEntry
    from pt2doctor.trace.records import CompileId
    from pt2doctor.trace.types import CompileRecord

    records = [CompileRecord(CompileId(0, i), "s", has_guarded_code=True) for i in range(2)]
    compiles = [
        CompileEntry(record, "first_compile" if i == 0 else "recompile")
        for i, record in enumerate(records)
    ]
    frame = FrameEntry("s", 0, "serve", "/app/serve.py", 3, compiles=compiles)
    row = Varying("mode", "value", ["'a'", "'b'"], False, 1)
    look = Outlook(None, "mode changed once: too few recompiles", [row])
    title = _recompile_title(frame, FrameExplanation([], None, [], look))
    assert title.endswith("recompiled 1 time: 2 variants, bound unknown (mode changed once)")


def test_values_recur_when_a_variant_is_called_after_a_later_one_compiled() -> None:
    """The probes' heat: a variant called more often than its frame was called before the next
    value compiled served calls after it, so its value came back (buckets), and one that was
    not (a size per call, each once) did not."""
    from pt2doctor.analysis.recompiles.outlook import VariantRow, recurring_sources

    def rows(calls: list[int]) -> list[VariantRow]:
        return [VariantRow(f"0/{i}", {"x.shape[1]": str(16 << i)}, [], n, None)
                for i, n in enumerate(calls)]  # fmt: skip

    at = {"0/0": 0, "0/1": 2, "0/2": 4}
    assert recurring_sources(rows([6, 3, 3]), at) == {"x.shape[1]"}
    assert recurring_sources(rows([2, 2, 1]), at) == set()  # each value only until the next
    assert recurring_sources(rows([6, 3, 3]), {}) == set()  # no probes: nothing to tell
    dynamic = [VariantRow("0/0", {"x.shape[1]": "dynamic"}, [], 9, None), *rows([1, 1])[1:]]
    assert recurring_sources(dynamic, at) == set()  # a dynamic variant serves every value


def test_recurring_sizes_under_dynamic_false_are_one_fix_bounded_by_design() -> None:
    ids = Varying(
        "kwargs['ids'].shape[1]",
        "size",
        ["16", "32", "64"],
        False,
        2,
        recurs=True,
        expr=user_expr("kwargs['ids'].shape[1]"),
    )
    mask = Varying(
        "kwargs['mask'].shape[1]",
        "size",
        ["16", "32", "64"],
        False,
        2,
        recurs=True,
        expr=user_expr("kwargs['mask'].shape[1]"),
    )
    item = explanation(varying=[ids, mask])
    item.compile_call = {"settings": {"dynamic": False}, "file": "serve.py", "line": 9}
    (fix,) = recompile_candidates(item)
    assert fix.text.startswith("kwargs['ids'].shape[1] and kwargs['mask'].shape[1] take 3 values")
    assert "dynamic=False in your torch.compile call at serve.py:9" in fix.text
    assert fix.application is None  # the fix is a warm-up: code
    ids.recurs = mask.recurs = False  # sizes that never came back: drop dynamic=False, once
    (fix,) = recompile_candidates(item)
    assert "keeps kwargs['ids'].shape[1] and kwargs['mask'].shape[1] static" in fix.text
    assert fix.application is not None and fix.application.compile == (("dynamic", None),)


def test_a_kwargs_dict_of_another_length_is_a_value_change_with_both_lengths() -> None:
    from pt2doctor.analysis.recompiles.changes import to_change
    from pt2doctor.analysis.recompiles.guards import FailedGuard

    failure = FailedGuard("len(L['kwargs']) != 1", "other", None)
    change = to_change(failure, {"len(kwargs)": "2"})
    assert (change.source, change.kind, change.old, change.new) == (
        "len(kwargs)",
        "value",
        "1",
        "2",
    )


def _timed_frame(seconds: list[float]) -> FrameEntry:
    """A frame whose compiles took ``seconds`` (the first is its first compile): the clock is
    the seam, the rest is the ledger's own types."""
    from pt2doctor.analysis.recompiles.ledger import CompileEntry
    from pt2doctor.trace.records import CompileId
    from pt2doctor.trace.types import CompileRecord

    compiles = []
    for i, spent in enumerate(seconds):
        record = CompileRecord(CompileId(0, i), "s", has_guarded_code=True)
        record.compile_time_s = spent
        compiles.append(CompileEntry(record, "first_compile" if i == 0 else "recompile"))
    return FrameEntry("s", 0, "forward", "/app/model.py", 3, compiles=compiles)


def test_bounded_recompiles_that_cost_more_than_the_first_compile_are_a_warning() -> None:
    """hf_collate (blind 17): by design or not, 40 s of recompiles against a 10 s first
    compile is where the run's compile time goes; two cheap recompiles stay info."""
    from pt2doctor.analysis.findings.trace_findings import _recompile_severity, _recompile_title

    row = Varying("x.shape[0]", "size", ["32", "16"], False, 2, recurs=True)
    look = FrameExplanation([], None, [], Outlook(True, "3 variants", [row]))
    costly = _timed_frame([3.0, 4.0, 4.0])
    assert _recompile_severity(costly, look) == "warning"
    title = _recompile_title(costly, look)
    assert "(8.0 s of compiling, the first compile 3.0 s)" in title
    assert "their recompiles cost more than the first compile" in title
    cheap = _timed_frame([3.0, 1.0, 1.0])
    assert _recompile_severity(cheap, look) == "info"
    assert "s of compiling" not in _recompile_title(cheap, look)
    # One recompile, however long, is not "recompiles": the first compile's second variant.
    assert _recompile_severity(_timed_frame([3.0, 9.0]), look) == "info"
    # Over the first compile but under 5 s in all: compile time too small to be the finding.
    assert _recompile_severity(_timed_frame([1.0, 2.0, 2.0]), look) == "info"


def test_a_gradual_unfreezing_is_one_variant_per_stage_fixed_by_dropping_frozen_grads() -> None:
    """Parameters whose requires_grad went False -> True once each (one more block every few
    steps): not states to pre-warm but a schedule; the fix keeps requires_grad and drops the
    frozen gradients. A grad-mode flag beside them is a state again: the flags fix."""
    from pt2doctor.analysis.recompiles.outlook import _bounded_reason

    rows = [
        Varying(f"self.blocks[{i}].weight", "requires_grad", ["False", "True"], False, 1)
        for i in (2, 3)
    ]
    (fix,) = recompile_fixes(explanation([], [], varying=rows))
    assert "self.blocks[2], self.blocks[3]" in fix and "`p.grad = None`" in fix
    assert "pre-warm" not in fix
    assert "one variant per stage of unfreezing" in _bounded_reason(rows, 3)
    mixed = [*rows, Varying("grad mode", "grad_mode", ["True", "False"], False, 1)]
    (fix,) = recompile_fixes(explanation([], [], varying=mixed))
    assert "p.grad = None" not in fix and "grad on / torch.no_grad()" in fix
    assert "unfreezing" not in _bounded_reason(mixed, 3)
    # An input's requires_grad is not a module's parameter being unfrozen.
    inputs = [Varying("x", "requires_grad", ["False", "True"], False, 1)]
    assert "p.grad = None" not in recompile_fixes(explanation([], varying=inputs))[0]
