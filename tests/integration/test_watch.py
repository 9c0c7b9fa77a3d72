"""``pt2doctor.watch()``: in-process capture with real Dynamo (``backend="eager"``) runs.

Expected lines come from ``# MARK:`` comments in this file, call counts from the test's own
loops; the assertion messages must carry the explanation (site, category, failed guard).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracles import marker_in

torch = pytest.importorskip("torch")

import pt2doctor  # noqa: E402
from pt2doctor.rundir.read import load_probes  # noqa: E402

pytestmark = pytest.mark.torch_run


def _line(marker: str) -> int:
    return marker_in(Path(__file__), marker)


def with_item_break(x):
    y = x.cos()
    if y.sum().item() > 1e9:  # MARK:item
        y = y * 0
    return y + 1


def pure(x):
    return x.sin() * 2


def with_markup(x):
    print("<script>alert('pt2doctor')</script>")  # MARK:markup
    return x + 1


def with_flag(x, mode: str):
    return x + len(mode)  # MARK:flag


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_break_heat_and_the_no_break_assertion() -> None:
    compiled = torch.compile(with_item_break, backend="eager")
    with pt2doctor.watch() as w:
        for _ in range(4):
            compiled(torch.ones(3))
    (site,) = w.report()["graph_breaks"]
    assert (site["site"]["line"], site["site"]["function"]) == (_line("item"), "with_item_break")
    assert site["hits"] == 4 and site["hot"] is True
    with pytest.raises(AssertionError) as failure:
        w.assert_no_graph_breaks()
    message = str(failure.value)
    assert f"test_watch.py:{_line('item')} in with_item_break" in message
    assert "data_dependent_scalar" in message and "Tensor.item()" in message
    w.close()


def test_a_clean_function_passes_every_assertion() -> None:
    compiled = torch.compile(pure, backend="eager")
    with pt2doctor.watch() as w:
        compiled(torch.ones(3))
        w.mark_warmup_done()
        compiled(torch.ones(3))
    w.assert_no_graph_breaks()
    w.assert_max_variants(pure, 1)
    w.assert_no_recompiles()
    (entry,) = w.report()["compiles"]
    assert entry["calls"] == 2
    w.close()


def test_variants_over_the_limit_name_the_failed_guard() -> None:
    compiled = torch.compile(with_flag, backend="eager")
    with pt2doctor.watch() as w:
        for mode in ("a", "bb", "ccc"):
            compiled(torch.ones(2), mode)
    w.assert_max_variants(with_flag, 3)
    with pytest.raises(AssertionError) as failure:
        w.assert_max_variants(with_flag, 2)
    message = str(failure.value)
    assert "has 3 variants, more than 2" in message
    assert "mode: value 'a' → 'bb'" in message  # the user's name, old → new
    assert "outlook: mode took a new value at every recompile" in message
    w.close()


class Counting(torch.nn.Module):
    """A module that counts its calls in an int attribute: a new variant per call until the
    recompile limit (8) refuses one."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):  # MARK:counting
        self.calls += 1
        return self.lin(x) * self.calls


def test_the_compiled_module_itself_is_asserted_and_frames_read_by_name() -> None:
    """What torch.compile returned is what a user passes: assert_max_variants(compiled, 2)
    fails as assert_max_variants(module, 2) does (it passed, matching nothing), and the
    refused compile at the limit is named by its frame, not '(None:None)'."""
    module = Counting()
    compiled = torch.compile(module, backend="eager")
    with pt2doctor.watch() as w:
        for _ in range(10):
            compiled(torch.randn(2, 4))
    frames = [f for f in w.report()["frames"] if f["function"] == "forward"]
    assert [f["variants"] for f in frames] == [8]  # the raw count the message must say
    for target in (compiled, module):
        with pytest.raises(AssertionError) as failure:
            w.assert_max_variants(target, 2)
        assert f"Counting.forward (test_watch.py:{_line('counting')})".replace(
            "test_watch.py", str(Path(__file__))) in str(failure.value)  # fmt: skip
        assert "has 8 variants, more than 2" in str(failure.value)
    with pytest.raises(AssertionError) as failure:
        w.assert_no_recompiles()
    message = str(failure.value)
    assert "None:None" not in message
    assert f"0/8 Counting.forward ({Path(__file__)}:{_line('counting')}): refused" in message
    with pytest.raises(AssertionError, match="no compiled frame of pure"):
        w.assert_max_variants(pure, 1)  # never compiled here: said, not passed
    w.close()


def test_a_compile_after_warmup_fails_with_its_guard() -> None:
    compiled = torch.compile(pure, backend="eager")
    with pt2doctor.watch() as w:
        compiled(torch.ones(3))
        w.mark_warmup_done()
        compiled(torch.ones(3, 5))
    with pytest.raises(AssertionError) as failure:
        w.assert_no_recompiles()
    assert "x: rank 1 → 2" in str(failure.value)
    w.close()


def test_watches_do_not_see_each_other() -> None:
    compiled = torch.compile(pure, backend="eager")
    with pt2doctor.watch() as first:
        compiled(torch.ones(3))
    with pt2doctor.watch() as second:
        compiled(torch.ones(3))  # cached: no compile inside the second watch
    assert len(first.report()["compiles"]) == 1
    assert second.report()["compiles"] == []
    first.close()
    second.close()


def test_report_renders_escaped_html_and_terminal_text() -> None:
    compiled = torch.compile(with_markup, backend="eager")
    with pt2doctor.watch() as w:
        compiled(torch.ones(2))
    report = w.report()
    html = report._repr_html_()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#x27;pt2doctor&#x27;)&lt;/script&gt;" in html
    assert f"test_watch.py:{_line('markup')} with_markup" in html
    text = str(report)
    assert "pt2doctor report" in text and "print_or_logging" in text
    assert report["graph_breaks"][0]["site"]["function"] == "with_markup"  # still the dict
    w.close()


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).relu()


def test_ddps_own_wrapper_break_splits_nothing(tmp_path: Path) -> None:
    """``torch.compile(DDP(model))`` (one gloo rank in this process): Dynamo skips DDP's
    ``_inside_ddp_forward`` on purpose and breaks there (in contextlib, which wraps it), in
    frames that compile no ops, while the model's forward compiles whole. That break is
    information, without torch's hint to force tracing into DDP; a break between ops
    (``with_item_break``) still splits a graph."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    store = f"file://{tmp_path / 'store'}"
    dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
    try:
        model = torch.compile(DistributedDataParallel(Net()), backend="eager")
        item = torch.compile(with_item_break, backend="eager")
        with pt2doctor.watch() as w:
            for _ in range(3):
                model(torch.randn(2, 4)).sum().backward()
                item(torch.ones(3))
        report = w.report()
    finally:
        dist.destroy_process_group()
    sites = {site["site"]["function"]: site for site in report["graph_breaks"]}
    wrapper = sites["__init__"]  # contextlib's _GeneratorContextManager, around DDP's wrapper
    assert wrapper["site"]["file"].endswith("contextlib.py") and wrapper["hits"] == 3
    assert wrapper["splits_nothing"] is True and "dont_skip_tracing" not in wrapper["advice"]
    # Not the user's code: the advice names the user's line that led there.
    here = "in library code, reached from your test_ddps_own_wrapper_break_splits_nothing"
    assert f"{here} (test_watch.py:" in wrapper["advice"], wrapper["advice"]
    assert sites["with_item_break"]["splits_nothing"] is False
    severity = {
        function: next(
            f["severity"]
            for f in report["findings"]
            if f["code"] == "graph_break" and f["subject"].get("function") == function
        )
        for function in ("__init__", "with_item_break")
    }
    assert severity == {"__init__": "info", "with_item_break": "warning"}
    forward = [c for c in report["compiles"] if c["function"] == "forward"]
    assert [(c["graph_count"], c["calls"]) for c in forward] == [(1, 3)]


def test_guards_are_timed_once_per_variant_however_many_watches_ran() -> None:
    """Each watch registers its guard timing and removes it when it closes: after three
    watches one compile is timed once, by the open watch only."""
    from pt2doctor import torchcompat

    for _ in range(2):
        with pt2doctor.watch():
            pass
    compiled = torch.compile(pure, backend="eager")
    with pt2doctor.watch() as w:
        compiled(torch.ones(3))
        assert len(torchcompat._guard_hooks) == 1
    report = w.report()
    assert torchcompat._guard_hooks == []
    (row,) = report["compiles"]
    assert row["function"] == "pure"
    probes = load_probes(w.dir)
    assert probes is not None
    timed = probes.guard_check_us
    assert set(timed) == {row["compile_id"]} and 0 < timed[row["compile_id"]] < 1000, timed


def test_watch_profiles_the_steady_calls_in_process() -> None:
    """``watch(profile=N)``: the same window and time split as ``run --profile``, in this
    process: both graphs of the break, six calls each. Under the eager backend the regions'
    ops are not split from their overhead, and the report says so."""
    compiled = torch.compile(with_item_break, backend="eager")
    x = torch.randn(64)
    with pt2doctor.watch(profile=6) as w:
        for _ in range(14):  # 5 warmup calls, a window of 6, then the rest
            compiled(x)
        report = w.report()
    profile = report["profile"]
    calls = 6 - len((profile["window"]["noise"] or {}).get("preempted", []))
    assert profile["available"] and profile["window"]["calls"] == calls  # less preempted ones
    assert {r["compile_id"] for r in profile["regions"]} == {"0/0", "1/0"}
    assert all(r["calls"] == calls for r in profile["regions"])
    assert any("another backend" in note for note in profile["notes"])
    assert Path(profile["trace_file"]).is_file()


def scaled_step(x, temperature):
    return (x * 2).softmax(-1) / temperature


def test_a_window_whose_hot_variant_stops_is_timed_over_its_whole_calls() -> None:
    """An annealed float: six calls at 2.0 (the window opens on that variant after five),
    then a new value each call: one recompile makes it dynamic and every later call goes to
    that variant. The window closes at the block's end holding two calls of the first
    variant; the recompile and the later calls are the tail after its last call (outside
    review: 325 ms "per call" of a 0.7 ms step, its eager ops the compile's tracing).
    The time per call is the whole periods', from the profiler's own marks."""
    torch._dynamo.reset()
    compiled = torch.compile(scaled_step, backend="eager")
    x = torch.randn(8, 64)
    with pt2doctor.watch(profile=20) as w:
        for step in range(20):
            compiled(x, 2.0 if step < 7 else 2.0 - 0.01 * step)
    report = w.report()  # the window closes with the block
    profile = report["profile"]
    window = profile["window"]
    assert window["closed_by"] == "exit" and window["compiles_in_window"] == 1
    trace = json.loads(Path(profile["trace_file"]).read_text())
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    start = next(e["ts"] + e["dur"] for e in events if e["name"] == "pt2doctor: window start")
    marks = sorted(e["ts"] for e in events if e["name"] == "pt2doctor: call")
    assert window["ms_per_call"] == pytest.approx((marks[-1] - start) / len(marks) / 1000,
                                                  rel=0.05)  # fmt: skip
    assert any("ran after the hot graph's last call" in note for note in profile["notes"])
    assert not [op for op in profile["eager_ops"] if op["name"] == "aten::_softmax"]


def denoise_step(x, i):
    y = x * 0.9 + i
    print("pt2doctor test_watch: step", y.sum().item())  # MARK:called_break
    return y


def sample_calls_a_step(x):
    for i in range(3):
        x = denoise_step(x, i) + 1
    return x


def sample_inline(x):
    for i in range(3):
        x = x * 0.9 + i
        print("pt2doctor test_watch: step", x.sum().item())  # MARK:inline_break
    return x


def test_a_skipped_loop_frame_says_whether_its_break_is_in_a_function_it_calls() -> None:
    """A break in a function the loop calls: that function is still compiled on its own (the
    report has its graphs), so "compile the loop body" would change nothing; a break in the
    loop's own code: compiling the body as its own function is the fix."""
    torch._dynamo.reset()
    with pt2doctor.watch() as w:
        for fn in (sample_calls_a_step, sample_inline):
            compiled = torch.compile(fn, backend="eager")
            for _ in range(2):
                compiled(torch.ones(3))
    report = w.report()
    torch._dynamo.reset()
    skipped = {f["subject"]["name"]: f["advice"] for f in report["findings"]
               if f["code"] == "frame_skipped"}  # fmt: skip
    called = skipped["sample_calls_a_step"]
    assert f"break at test_watch.py:{_line('called_break')}" in called
    assert "in denoise_step(), which its loop calls" in called
    assert "compile the loop body" not in called
    step_frames = [f for f in report["frames"] if f["function"] == "denoise_step"]
    assert step_frames and not any(f["skipped"] for f in step_frames)
    assert sum(f["compiles"] for f in step_frames) >= 1
    inline = skipped["sample_inline"]
    assert f"break at test_watch.py:{_line('inline_break')}" in inline
    assert "compile the loop body as its own function" in inline


def test_the_in_process_api_says_what_a_misuse_got_wrong() -> None:
    """Arguments swapped, a string for a count, a tensor for a list of samples, the inputs
    before the model: one TypeError naming the call and what it got (second outside review:
    'no compiled frame of None', a raw TypeError from deep inside, a tensor read row by row
    into a verdict, an AttributeError on named_modules, and profile='20' accepted and
    ignored)."""
    torch._dynamo.reset()
    model = torch.nn.Linear(4, 4)
    compiled = torch.compile(model, backend="eager")
    with pt2doctor.watch() as w:
        compiled(torch.randn(2, 4))
    with pytest.raises(TypeError, match=r"assert_max_variants: fn must be the function or module"):
        w.assert_max_variants(1, model)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"assert_max_variants: n must be an int, got str '2'"):
        w.assert_max_variants(model, "2")  # type: ignore[arg-type]
    w.assert_max_variants(compiled, 1)  # what torch.compile returned is accepted
    with pytest.raises(TypeError, match=r"watch: profile must be an int, got str '20'"):
        pt2doctor.watch(profile="20")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"should_compile: samples must be a list of inputs"):
        pt2doctor.should_compile(model, torch.randn(4, 4))
    with pytest.raises(TypeError, match=r"compare_modules: the first argument must be the model"):
        pt2doctor.compare_modules(torch.randn(2, 4), model)
    # Code compiled before the watch is not compiled again inside it: the message says so.
    with pt2doctor.watch() as again:
        compiled(torch.randn(2, 4))
    with pytest.raises(AssertionError, match=r"nothing compiled while this watch was open"):
        again.assert_max_variants(model, 1)
