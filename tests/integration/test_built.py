"""What the compiler built, on real traces: the kernel map against Inductor's own provenance
artifacts (the tlparse corpus, read independently), and a real ``pt2doctor run --kernels``
of a block with a fallback op and an unrolled loop, asserted against its ``# MARK:`` lines and
its raw trace. The same run, with its provenance records taken out of the trace, shows the
partial map the output code alone gives."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from oracles import marker_in, raw_file_records, raw_records
from pt2doctor.analysis.built.kernels import kernel_map
from pt2doctor.cli import main
from pt2doctor.report.schema import build_report
from pt2doctor.rundir.load import load_run
from pt2doctor.trace.collect import collect_run

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "tlparse-inputs"
PROVENANCE_LOGS = (
    sorted((CORPUS / "inputs").glob("inductor_provenance_*")) if CORPUS.exists() else []
)
PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "run" / "run_built.py"
FRAME = re.compile(r'File "([^"]+)", line (\d+)')
PROVENANCE = ("inductor_provenance_tracking", "inductor_triton_kernel_to_post_grad_nodes")


def _artifact(log: Path, name: str) -> dict[str, Any] | None:
    found = None
    for envelope, payload in raw_file_records(log):
        if envelope.get("artifact", {}).get("name") == name:
            found = json.loads(payload)  # the last one, as the collector keeps it
    return found


@pytest.mark.corpus
@pytest.mark.skipif(not PROVENANCE_LOGS, reason="needs ../shared/corpus/tlparse-inputs")
@pytest.mark.parametrize("log", PROVENANCE_LOGS, ids=[p.name for p in PROVENANCE_LOGS])
def test_every_provenance_log_maps_its_kernels_as_inductor_recorded_them(log: Path) -> None:
    run = collect_run([log])
    built = [c.built for c in run.compiles if c.built is not None] or [run.aot_built]
    assert len(built) == 1 and built[0] is not None
    found = kernel_map(built[0])
    assert found is not None and found.source == "provenance"
    mappings = _artifact(log, "inductor_provenance_tracking_node_mappings")
    assert mappings is not None
    assert [k.key for k in found.kernels] == list(mappings["cppCodeToPost"])
    traces = _artifact(log, "inductor_provenance_tracking_kernel_stack_traces") or {}
    for kernel in found.kernels:
        raw = traces.get(kernel.key)
        if raw is None:
            continue  # lines from the node mappings instead (checked on the real run below)
        innermost = [FRAME.findall(trace)[-1] for trace in raw if FRAME.search(trace)]
        assert [(u.file, str(u.line)) for u in kernel.user_lines] == list(dict.fromkeys(innermost))


@pytest.fixture(scope="module")
def built_run(doctor_run: Any) -> Any:
    run = doctor_run("built_kernels", ("--kernels",), "run_built")
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def _report(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "report.json").read_text())


def _lines(kernel: dict[str, Any]) -> set[int]:
    return {u["line"] for u in kernel["user_lines"] if u["file"] == str(PROGRAM)}


@pytest.mark.torch_run
def test_kernels_map_to_the_lines_of_the_block(built_run: Any) -> None:
    report = _report(built_run.run_dir)
    assert report["compiles"][0]["kernel_map"] == {"source": "provenance", "partial": None}
    kernels = report["compiles"][0]["kernels"]
    raw = [
        p for e, p in raw_records(built_run.run_dir / "trace") if "node_mappings" in json.dumps(e)
    ]
    keys = list(json.loads(raw[-1])["cppCodeToPost"])
    assert [k["name"] for k in kernels] == [key.rsplit(":", 1)[0] for key in keys]
    by_kind = {k["kind"] for k in kernels}
    assert by_kind == {"generated", "library", "fallback"}
    gelu = [k for k in kernels if k["kind"] == "generated" and "erf" in k["ops"]]
    assert len(gelu) == 1 and _lines(gelu[0]) == {marker_in(PROGRAM, "gelu")}
    norm = next(k for k in kernels if "rsqrt" in k["ops"])
    assert _lines(norm) == {marker_in(PROGRAM, "norm")}
    (cumsum,) = [k for k in kernels if k["kind"] == "fallback"]
    assert cumsum["name"] == "torch.ops.aten.cumsum.default"
    assert _lines(cumsum) == {marker_in(PROGRAM, "cumsum")}
    assert json.loads((built_run.run_dir / "manifest.json").read_text())["kernels"] is True
    # The caches are off: said as --kernels' doing, not as "disabled, or not logged" (second
    # outside review).
    assert (
        "`run --kernels` turns the FX graph and AOTAutograd caches off"
        in (report["cold_start"]["verdict"])
    )


@pytest.mark.torch_run
def test_the_unrolled_loop_is_named_with_its_count_share_and_compile_time(built_run: Any) -> None:
    report = _report(built_run.run_dir)
    compile_ = report["compiles"][0]
    loop_line = marker_in(PROGRAM, "loop")
    by_line = {row["line"]: row["ops"] for row in compile_["graph"]["by_line"]}
    assert by_line[loop_line] == 24 * 4  # gains[i], sin, *, + per step
    assert compile_["graph"]["ops"] == compile_["graph_op_count"] == sum(by_line.values())
    (finding,) = [f for f in report["findings"] if f["code"] == "unrolled_loop"]
    share = by_line[loop_line] / compile_["graph"]["ops"]
    assert f"line {loop_line} of forward" in finding["title"]
    assert "unrolled 24 times" in finding["title"] and f"({share:.0%})" in finding["title"]
    assert f"compiled in {compile_['compile_time_s']:.1f} s" in " ".join(finding["evidence"])
    (fallback,) = [f for f in report["findings"] if f["code"] == "fallback_op"]
    assert f"run_built.py:{marker_in(PROGRAM, 'cumsum')}" in fallback["evidence"][0]


@pytest.mark.torch_run
def test_without_provenance_the_map_is_partial_and_says_why(built_run: Any, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(built_run.run_dir, copy)
    for log in (copy / "trace").iterdir():
        blocks, keep = re.split(r"(?m)^(?=\S)", log.read_text()), []
        keep = [b for b in blocks if not any(name in b.split("\n", 1)[0] for name in PROVENANCE)]
        log.write_text("".join(keep))
    for report in copy.glob("report.*"):
        report.unlink()
    assert main(["report", str(copy), "--json", str(copy / "report.json")]) == 0
    compile_ = _report(copy)["compiles"][0]
    assert compile_["kernel_map"]["source"] == "output_code"
    assert "--kernels" in compile_["kernel_map"]["partial"]
    (cumsum,) = [k for k in compile_["kernels"] if k["kind"] == "fallback"]
    assert _lines(cumsum) == {marker_in(PROGRAM, "cumsum")}  # from its Source Nodes comment
    assert all(not k["user_lines"] for k in compile_["kernels"] if k["kind"] == "generated")


TRAIN = PROGRAM.with_name("run_built_train.py")


@pytest.mark.torch_run
def test_a_training_compile_maps_its_forward_and_backward_kernels(doctor_run: Any) -> None:
    """Forward and backward are two Inductor graphs with their own provenance (keys restart
    at 1, and torch 2.13's backward node mapping is empty): each graph's kernels are kept."""
    run = doctor_run("built_train", ("--kernels",), "run_built_train")
    assert run.returncode == 0, run.stderr[-3000:]
    (compile_,) = _report(run.run_dir)["compiles"]
    mappings = [
        json.loads(p)
        for e, p in raw_records(run.run_dir / "trace")
        if "node_mappings" in json.dumps(e)
    ]
    codes = [p for e, p in raw_records(run.run_dir / "trace") if "inductor_output_code" in e]
    assert len(mappings) == len(codes) == 2 and "cppCodeToPost" not in mappings[1]
    forward = [key.rsplit(":", 1)[0] for key in mappings[0]["cppCodeToPost"]]
    backward = re.findall(r"(?m)^\s+# \[Provenance debug handles\] (\S+):\d+$", codes[1])
    assert [k["name"] for k in compile_["kernels"]] == forward + backward
    assert compile_["kernel_map"] == {"source": "provenance", "partial": None}
    lines = {marker_in(TRAIN, "gelu"), marker_in(TRAIN, "tanh")}
    for kernel in compile_["kernels"]:
        found = {u["line"] for u in kernel["user_lines"] if u["file"] == str(TRAIN)}
        assert found and found <= lines, kernel
    gelu_backward = next(k for k in compile_["kernels"] if "gelu_backward" in k["name"])
    assert marker_in(TRAIN, "gelu") in {u["line"] for u in gelu_backward["user_lines"]}


def test_the_unrolled_loop_fix_compiles_one_graph_for_every_step() -> None:
    """The advice's second way, applied to run_built.py's loop: the body compiled on its own,
    the step's gain passed as a tensor, is one graph of 3 ops for all 24 steps (eager backend:
    the graph count is Dynamo's)."""
    import torch
    from torch._dynamo.testing import CompileCounter

    from pt2doctor.analysis.built.graph_size import _unrolled_advice

    assert "passing what changes per step as a tensor" in _unrolled_advice(str(PROGRAM), 24)
    torch._dynamo.reset()
    counter = CompileCounter()

    @torch.compile(backend=counter)
    def step(h: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
        return h + gain * torch.sin(h)

    gains, h = torch.linspace(0.1, 0.2, 24), torch.randn(4, 32)
    for i in range(24):
        h = step(h, gains[i])
    assert (counter.frame_count, counter.op_count) == (1, 3)


def _raw_fusion_log(run_dir: Path) -> str:
    return (run_dir / "fusion.log").read_text()


@pytest.mark.torch_run
def test_the_fusion_log_is_kept_and_each_refusal_is_in_it(built_run: Any) -> None:
    """``run --kernels`` keeps Inductor's fusion log beside the trace, out of the program's
    output; each refused pair listed is a ``cannot fuse`` line of it whose two nodes ended in
    different kernels, which are this graph's kernels, from the block's lines."""
    raw = _raw_fusion_log(built_run.run_dir)
    assert "[0/0] [__fusion] ===== attempting fusion (1/" in raw
    for output in ("stdout.log", "stderr.log"):
        assert "__fusion" not in (built_run.run_dir / output).read_text()
    (compile_,) = _report(built_run.run_dir)["compiles"]
    fusion = compile_["fusion"]
    assert fusion["available"] is True and "C++ backend" in fusion["note"]
    assert fusion["fused"] == len(re.findall(r"\[__fusion\] fusing \S+ with \S+$", raw, re.M))
    assert fusion["rejected"], "the block's layer norm and loop are refused fusion in 2.13"
    names = {k["name"] for k in compile_["kernels"]}
    marks = {marker_in(PROGRAM, m) for m in ("norm", "gelu", "cumsum", "loop")}
    for refusal in fusion["rejected"]:
        assert f"cannot fuse {refusal['a']} with {refusal['b']}: {refusal['reason']}" in raw
        for side in (refusal["a_side"], refusal["b_side"]):
            assert side["kernel"] in names
            assert side["line"]["file"] == str(PROGRAM) and side["line"]["line"] in marks
    fused = re.findall(r"\[__fusion\] fusing (\S+) with (\S+)$", raw, re.M)
    fused_pairs = {frozenset(pair) for pair in fused}
    assert not any(frozenset((r["a"], r["b"])) in fused_pairs for r in fusion["rejected"])


@pytest.mark.torch_run
def test_diff_of_a_fusion_config_change_names_the_graph_and_kernels(
    built_run: Any, doctor_run: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same block with Inductor's max_fusion_size at 1: the scheduler refuses fusions it
    made before ("exceeds max fusion"), and ``diff`` names the graph, the kernels and the
    reason, as a regression."""
    small = doctor_run("built_fusion_1", ("--kernels",), "run_built", "--max-fusion-size", "1")
    assert small.returncode == 0, small.stderr[-3000:]
    assert "exceeds max fusion" in _raw_fusion_log(small.run_dir)
    assert "exceeds max fusion" not in _raw_fusion_log(built_run.run_dir)
    assert main(["diff", str(built_run.run_dir), str(small.run_dir), "--format", "json"]) == 0
    changes = json.loads(capsys.readouterr().out)["changes"]
    (kernels,) = [c for c in changes if c["kind"] == "kernels"]
    assert kernels["subject"].startswith("graph 0/0 forward (run_built.py:")
    assert kernels["regression"] is True
    norm = f"cpp_fused_native_layer_norm_0 (run_built.py:{marker_in(PROGRAM, 'norm')})"
    assert f"now refused: two loops of {norm} not fused: exceeds max fusion" in kernels["detail"]


@pytest.mark.torch_run
def test_the_html_panel_links_kernels_and_lines_both_ways_in_a_browser(
    built_run: Any, tmp_path: Path
) -> None:
    """report.html's "What was built" panel in headless Chromium: every kernel links to its
    user lines and every line back to its kernels, each link lands on an element of the page,
    and the cumsum line's HTML comment is text, not markup."""
    from test_html_report import Elements, open_in_chromium

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (install it with `make chromium` or .ci/run)")
    assert "PWNED-K" in (built_run.run_dir / "report.json").read_text()
    dom = open_in_chromium(chromium, built_run.run_dir / "report.html", tmp_path / "built.png")
    parsed = Elements()
    parsed.feed(dom)
    assert "script" not in [tag for tag, _ in parsed.elements]
    assert parsed.title == "pt2doctor report"
    ids = {attrs["id"] for _, attrs in parsed.elements if attrs.get("id")}
    assert "built" in ids
    links = [attrs["href"][1:] for tag, attrs in parsed.elements
             if tag == "a" and (attrs.get("href") or "").startswith("#b0-")]  # fmt: skip
    kernel_rows = {i for i in ids if re.fullmatch(r"b0-k\d+", i)}
    line_rows = {i for i in ids if re.fullmatch(r"b0-l\d+", i)}
    (compile_,) = _report(built_run.run_dir)["compiles"]
    assert len(kernel_rows) == len(compile_["kernels"])
    assert len(line_rows) == len({(u["file"], u["line"]) for k in compile_["kernels"]
                                  for u in k["user_lines"]})  # fmt: skip
    assert set(links) == kernel_rows | line_rows  # every row is linked to, every link lands
    assert "&lt;script&gt;document.title='PWNED-K'" in dom


OPT_LOOP = PROGRAM.with_name("run_opt_loop.py")


@pytest.mark.torch_run
def test_an_optimizer_without_foreach_is_unrolled_per_parameter_and_foreach_fixes_it(
    doctor_run: Any,
) -> None:
    """torch 2.13 still unrolls Adam's single-tensor loop, once per parameter (24 of them):
    the finding says so from the optimizer's own lines and prints foreach=True; applied, the
    step's graph has no unrolled loop and fewer ops (eager backend: Dynamo's graphs)."""
    loop = doctor_run("opt_loop", ("--backend", "eager"), "run_opt_loop")
    fixed = doctor_run("opt_loop_foreach", ("--backend", "eager"), "run_opt_loop", "--foreach")
    assert loop.returncode == 0 and fixed.returncode == 0, loop.stderr[-3000:]
    report = _report(loop.run_dir)
    (finding,) = [f for f in report["findings"] if f["code"] == "unrolled_loop"]
    assert "_single_tensor_adam" in finding["title"] and "torch/optim/adam.py" in finding["title"]
    graphs = [p for e, p in raw_records(loop.run_dir / "trace") if "dynamo_output_graph" in e]
    (step_graph,) = [g for g in graphs if "_single_tensor_adam" in g]
    first = re.search(r"# File: (\S+adam\.py):(\d+) in _single_tensor_adam", step_graph)
    assert first is not None
    repeats = step_graph.count(f"# File: {first[1]}:{first[2]} in _single_tensor_adam")
    assert repeats == 24 and "unrolled 24 times" in finding["title"]
    share = int(re.search(r"\((\d+)%\)", finding["title"])[1])  # type: ignore[index]
    assert 30 <= share <= 100
    assert "foreach=True" in finding["advice"]
    after = _report(fixed.run_dir)
    assert not [f for f in after["findings"] if f["code"] == "unrolled_loop"]

    def step_ops(report: dict[str, Any]) -> int:
        return max(c["graph"]["ops"] for c in report["compiles"] if c["graph"])

    assert step_ops(after) < step_ops(report) / 2


GPT2 = PROGRAM.with_name("run_hf_gpt2.py")
GPT2_FLAGS = ("--kernels", "--profile", "--warmup-calls", "3", "--profile-calls", "8")
"""One run for the kernel map here and the profile in test_profile.py."""


@pytest.mark.torch_run
def test_a_hugging_face_model_maps_its_kernels_into_its_modeling_file(doctor_run: Any) -> None:
    """A random-init GPT-2 compiled with ``model.compile()``: each kernel's lines are the
    stack-trace artifact's innermost frames, and they lie in transformers' modeling_gpt2.py
    (attention, MLP, layer norms), named in the frame's own name, not the wrapper's."""
    pytest.importorskip("transformers")
    run = doctor_run("built_gpt2", GPT2_FLAGS, "run_hf_gpt2")
    assert run.returncode == 0, run.stderr[-3000:]
    report = _report(run.run_dir)
    (compile_,) = report["compiles"]
    assert compile_["kernel_map"] == {"source": "provenance", "partial": None}
    traces = [json.loads(p) for e, p in raw_records(run.run_dir / "trace")
              if "kernel_stack_traces" in json.dumps(e)]  # fmt: skip
    (stack_traces,) = traces
    for kernel in compile_["kernels"]:
        key = next(k for k in stack_traces if k.rsplit(":", 1)[0] == kernel["name"])
        innermost = set()
        for trace in stack_traces[key]:
            frames = FRAME.findall(trace)
            innermost.add((frames[-1][0], int(frames[-1][1])))
        assert {(u["file"], u["line"]) for u in kernel["user_lines"]} <= innermost
    files = {Path(u["file"]).name for k in compile_["kernels"] for u in k["user_lines"]}
    assert "modeling_gpt2.py" in files
    kinds = {k["kind"] for k in compile_["kernels"]}
    assert kinds == {"generated", "library"}  # matmuls and SDPA are library calls, not fallbacks
    sdpa = [k for k in compile_["kernels"] if "scaled_dot_product" in k["name"]]
    assert sdpa and sdpa[0]["kind"] == "library"
    assert not [f for f in report["findings"] if f["code"] == "fallback_op"]
    markdown = (run.run_dir / "report.md").read_text()
    assert "0/0 GPT2LMHeadModel.forward" in markdown and "modeling\\_gpt2.py:" in markdown


@pytest.mark.torch_run
def test_a_cache_hit_replays_old_lines_and_run_kernels_compiles_afresh(
    tmp_path: Path, run_env: dict[str, str], doctor_command: Any
) -> None:
    """Inductor's FX graph cache keys the graph, not its line numbers: a program edited above
    its lines, run again with provenance on the same cache, gets the first compile's lines
    back. The report says so (``kernel_map.cached_lines``); ``run --kernels`` turns the graph
    caches off, and its lines are the file's own."""
    import subprocess
    import sys

    program = tmp_path / "block.py"
    # The session's cache (its C++ builds are warm), and a graph no earlier run compiled: a
    # LayerNorm eps of this test's own makes the first compile a miss.
    eps = 1e-5 + uuid.uuid4().int % 10**6 * 1e-15
    source = PROGRAM.read_text().replace("nn.LayerNorm(32)", f"nn.LayerNorm(32, eps={eps!r})")
    assert source != PROGRAM.read_text()
    program.write_text(source)
    env = {**run_env, "INDUCTOR_PROVENANCE": "1"}

    def traced(name: str) -> dict[str, Any]:
        trace = tmp_path / name
        done = subprocess.run([sys.executable, str(program)], env={**env, "TORCH_TRACE": str(trace)},
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert main(["report", str(trace), "--json", str(tmp_path / f"{name}.json")]) == 0
        (compile_,) = json.loads((tmp_path / f"{name}.json").read_text())["compiles"]
        return dict(compile_)

    def gelu_line(compile_: dict[str, Any]) -> int:
        (gelu,) = [k for k in compile_["kernels"] if k["kind"] == "generated" and "erf" in k["ops"]]
        return int(gelu["user_lines"][0]["line"])

    first = traced("first")
    assert (
        gelu_line(first) == marker_in(program, "gelu") and "cached_lines" not in first["kernel_map"]
    )
    program.write_text("# an edit above every line\n# moves them down\n" + program.read_text())
    again = traced("again")
    assert again["cache"]["fx_graph"] == "hit"
    assert gelu_line(again) == marker_in(program, "gelu") - 2  # the first compile's line
    assert "cached_lines" in again["kernel_map"]
    out = tmp_path / "run"
    command = doctor_command(out, ("--kernels",), str(program.with_suffix("")))
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (fresh,) = json.loads((out / "report.json").read_text())["compiles"]
    assert fresh["cache"].get("fx_graph") != "hit" and "cached_lines" not in fresh["kernel_map"]
    assert gelu_line(fresh) == marker_in(program, "gelu")


def test_a_function_every_layer_calls_is_not_an_unrolled_loop(traced: Any) -> None:
    """Twelve copies of a weightless function, one per attention layer's q and k, in a
    whole-model compile: the raw graph holds them (twelve ``# File:`` groups of its first
    line), yet no unrolled_loop finding names it; the real loop beside it still gets one."""
    program = Path(__file__).resolve().parents[1] / "programs" / "rotary_layers.py"
    trace = traced("rotary_layers")
    graphs = [payload for envelope, payload in raw_records(trace)
              if "dynamo_output_graph" in envelope]  # fmt: skip
    rotary = f"{program}:{marker_in(program, 'rotary')} in apply_rotary_emb"
    assert max(graph.count(rotary) for graph in graphs) == 12
    report = build_report(load_run(trace))
    loops = [f for f in report["findings"] if f["code"] == "unrolled_loop"]
    assert not [f for f in loops if "apply_rotary_emb" in f["title"]]
    (loop,) = loops
    assert loop["subject"]["line"] == marker_in(program, "loop")
