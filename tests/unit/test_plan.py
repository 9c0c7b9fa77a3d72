"""The first screen's plan, from findings as the analyses word and place them (titles taken
from real runs: a regional Llama whose shared frame hit the recompile limit, a model with two
breaks; subjects as the frame, break and skipped-frame findings set them)."""

from __future__ import annotations

from pt2doctor.analysis.findings.model import Finding, Subject
from pt2doctor.analysis.findings.plan import PLAN_SIZE, plan

FRAME = "LlamaDecoderLayer.forward_with_checkpointing (transformers/modeling_layers.py:89)"
LAYER = Subject("frame", "LlamaDecoderLayer.forward_with_checkpointing",
                "transformers/modeling_layers.py", 89, "forward_with_checkpointing",
                stream="0", frame_id=3)  # fmt: skip


def _site(file: str, line: int, function: str) -> Subject:
    return Subject("site", None, file, line, function)


def test_one_line_per_frame_in_a_step_and_the_practice_s_order() -> None:
    findings = [
        Finding(
            "error",
            "recompile_limit_hit",
            f"{FRAME} hit the recompile limit",
            "raise it",
            subject=LAYER,
        ),
        *[
            Finding(
                "error",
                "unexplained_recompile_after_warmup",
                f"{FRAME} compiled after warmup (at {t} s, after {n} calls of its frame)",
                "",
                subject=LAYER,
            )
            for t, n in ((3.4, 2), (3.8, 3), (3.9, 4), (4.1, 5), (4.3, 6))
        ],
        Finding("warning", "overhead_bound", "0/0 Block.forward is overhead-bound: 73% ...", ""),
        Finding(
            "warning",
            "graph_break",
            "Graph break at m.py:35 in forward (x, ran 40 times)",
            "",
            subject=_site("m.py", 35, "forward"),
        ),
        Finding(
            "warning",
            "graph_break_cost",
            "The graph break at m.py:35 costs 0.015 ms",
            "",
            saves_ms=0.015,
            subject=_site("m.py", 35, "forward"),
        ),
        Finding(
            "warning",
            "graph_break",
            "Graph break at m.py:37 in forward (y, ran 40 times)",
            "",
            subject=_site("m.py", 37, "forward"),
        ),
        Finding(
            "warning",
            "graph_break_cost",
            "The graph break at m.py:37 costs 0.126 ms",
            "",
            saves_ms=0.126,
            subject=_site("m.py", 37, "forward"),
        ),
        Finding("info", "fallback_op", "aten.cumsum.default has no Inductor lowering here", ""),
        Finding("warning", "probes_unavailable", "Runtime heat ... is unavailable", ""),
    ]
    items = plan(findings)
    assert len(items) <= PLAN_SIZE
    assert [(i.step, i.code) for i in items] == [
        ("recompiles", "recompile_limit_hit"),  # one line for the frame, not six
        ("graph breaks", "graph_break"),  # the costlier break first, with its cost
        ("graph breaks", "graph_break"),
        ("performance", "overhead_bound"),
    ]
    assert "m.py:37" in items[1].title and items[1].saves_ms == 0.126
    assert "m.py:35" in items[2].title and items[2].saves_ms == 0.015


def test_a_break_that_made_its_frame_eager_is_the_frame_s_line() -> None:
    """The demo's detokenize: the .item() in its loop makes Dynamo skip the whole frame; the
    plan says so once."""
    findings = [
        Finding(
            "error",
            "frame_skipped",
            "detokenize (examples/serving_loop.py:136) runs eagerly: Dynamo skipped the whole "
            "frame",
            "",
            subject=Subject(
                "frame",
                "detokenize",
                "examples/serving_loop.py",
                136,
                "detokenize",
                stream="0",
                frame_id=2,
            ),
        ),
        Finding(
            "warning",
            "graph_break",
            "Graph break at examples/serving_loop.py:122 in forward (data_dependent_scalar, "
            "ran 10 times): Unsupported Tensor.item() call",
            "",
            subject=_site("examples/serving_loop.py", 122, "forward"),
        ),
        Finding(
            "warning",
            "graph_break",
            "Graph break at examples/serving_loop.py:142 in detokenize "
            "(data_dependent_scalar): Unsupported Tensor.item() call",
            "",
            subject=_site("examples/serving_loop.py", 142, "detokenize"),
        ),
    ]
    titles = [item.title for item in plan(findings)]
    assert len(titles) == 2
    assert titles[0].startswith("detokenize") and "serving_loop.py:122" in titles[1]
