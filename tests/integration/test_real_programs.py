"""Programs written the way their users write them (tests/programs/real): the diagnosis is
asserted against the raw trace and the programs' ``# MARK:`` lines, and every fix printed is
applied and re-run: it removes what it claims to, and what it says does not help does not.

Dynamo-level behaviour, so ``backend="eager"`` (the programs compile with it themselves)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oracles import marker_in, raw_records

pytestmark = pytest.mark.torch_run

REAL = Path(__file__).resolve().parents[1] / "programs" / "real"
SITE_PACKAGES = re.compile(r"(site-packages|/torch/|torch/_|nn/modules/|transformers/)")


TRY_ONE = ("--try-fixes", "1")
"""The corpus runs whose fix pt2doctor can apply are run with it tried (tests/integration/
test_try_fixes.py reads the tries): the re-run is the fix applied."""


def corpus_run(doctor_run: Any, key: str) -> Any:
    """The shared run of corpus program ``key`` (CORPUS: its flags and program)."""
    flags, program = CORPUS[key]
    return doctor_run(key, flags, program)


def _report(run: Any) -> dict[str, Any]:
    assert run.returncode == 0, run.stderr[-3000:]
    report: dict[str, Any] = json.loads((run.run_dir / "report.json").read_text())
    return report


def _compile_calls(run: Any) -> list[dict[str, Any]]:
    """The run's ``compile_call`` probe events: each torch.compile call, as recorded."""
    events = map(json.loads, (run.run_dir / "probes.jsonl").read_text().splitlines())
    return [event for event in events if event["kind"] == "compile_call"]


def _graphs(program: Path, *flags: str, env: dict[str, str]) -> tuple[int, str]:
    """Run the program with plain python: (graphs Dynamo compiled, its stderr)."""
    done = subprocess.run([sys.executable, str(program), *flags], env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    found = re.search(r"^graphs: (\d+)$", done.stdout, re.M)
    return (int(found[1]) if found else -1), done.stderr


def tried_graphs(run: Any, n: int = 1) -> tuple[int, str]:
    """What the program printed in ``tries/<n>``, the re-run with a fix applied by
    ``--try-fixes``: (graphs Dynamo compiled, its stderr)."""
    folder = run.run_dir / "tries" / str(n)
    found = re.search(r"^graphs: (\d+)$", (folder / "stdout.log").read_text(), re.M)
    return (int(found[1]) if found else -1), (folder / "stderr.log").read_text()


def _fixes(report: dict[str, Any]) -> list[str]:
    return [fix for frame in report["frames"] for fix in frame["fixes"]]


def test_a_rotary_cache_keyed_by_length_is_named_at_the_users_line_and_the_fix_works(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    program = REAL / "rotary_lm.py"
    report = _report(corpus_run(doctor_run, "real_rotary"))
    (frame,) = [f for f in report["frames"] if f["variants"] > 1]
    assert frame["variants"] == 6
    # The raw trace: the shape env specialized the length with this user stack.
    specializations = [json.dumps(e) for e, _ in raw_records(corpus_run(doctor_run, "real_rotary").run_dir / "trace")
                       if "symbolic_shape_specialization" in e]  # fmt: skip
    assert specializations and "user_stack" in specializations[0]
    (fix,) = [f for f in _fixes(report) if "ids.shape[1]" in f]
    line = marker_in(program, "cache")
    assert f"made static by your code at {program}:{line} (`if seq_len not in self._cache:" in fix
    assert not SITE_PACKAGES.search(fix.split("(`")[0]), fix  # nothing points into a library
    fixed, _ = _graphs(program, "--fixed", env=run_env)  # the fix, applied: one static, one dynamic
    assert fixed == 2
    # What the fix says does not help, does not: maybe_mark_dynamic changes nothing, and
    # mark_dynamic raises ConstraintViolationError.
    assert "maybe_mark_dynamic changes nothing" in fix
    assert _graphs(program, "--maybe-mark", env=run_env)[0] == 6
    graphs, stderr = _graphs(program, "--mark", env=run_env)
    assert graphs == -1 and "ConstraintViolationError" in stderr
    after = _report(doctor_run("real_rotary_fixed", (), "../real/rotary_lm", "--fixed"))
    assert max(f["variants"] for f in after["frames"]) == 2


def test_the_users_dynamic_false_is_the_evidence_for_a_static_batch_size(doctor_run: Any) -> None:
    """A BERT encoder compiled with ``dynamic=False`` over varying batch sizes: the fix names
    the user's own setting and its line (recorded from the torch.compile call), not the
    transformers line where the first guard was installed, and dropping it works."""
    pytest.importorskip("transformers")
    program = REAL / "bert_dynamic_false.py"
    run = corpus_run(doctor_run, "real_bert_static")
    report, calls = _report(run), _compile_calls(run)
    assert [c["settings"]["dynamic"] for c in calls] == [False]
    (fix,) = [f for f in _fixes(report) if "input_ids" in f]
    assert fix.startswith(f"dynamic=False in your torch.compile call at {program}:"
                          f"{marker_in(program, 'compile')} keeps kwargs['input_ids'].shape[0]")  # fmt: skip
    assert "transformers/" not in fix and "Rewrite that line" not in fix
    (frame,) = [f for f in report["frames"] if f["variants"] > 1]
    assert frame["variants"] == 6  # the run itself: one variant per batch size
    assert tried_graphs(run)[0] == 2  # the fix, applied (--try-fixes: dynamic=None)


def test_regional_compilation_layer_index_is_a_per_instance_constant_not_a_counter(
    doctor_run: Any,
) -> None:
    """Ten Llama decoder layers compiled one by one (``layer.compile()``) share one frame and
    differ by ``self_attn.layer_idx``: a per-layer constant. The fix says so (not "a counter:
    allow_unspec_int_on_nn_module"), and raising the recompile limit to cover the layers, as
    it says, ends the eager fallback."""
    pytest.importorskip("transformers")
    program = REAL / "llama_regional.py"
    run = corpus_run(doctor_run, "real_regional")
    report, calls = _report(run), _compile_calls(run)
    assert len(calls) == 10 and {c["name"] for c in calls} == {"LlamaDecoderLayer"}
    (frame,) = [f for f in report["frames"] if f["variants"] > 1]
    assert frame["limit_hit"] is True and frame["outlook"]["bounded"] is True
    fixes = _fixes(report)
    (head,) = [f for f in fixes if "layer_idx" in f]
    fix = " ".join(fixes[fixes.index(head) :])
    assert head.startswith("self.self_attn.layer_idx is a per-instance constant, not a counter: "
                          f"10 LlamaDecoderLayer instances are compiled one by one ({program}:"
                          f"{marker_in(program, 'compile')})")  # fmt: skip
    assert "Raise torch._dynamo.config.recompile_limit" in fix
    assert not any("allow_unspec_int_on_nn_module" in f for f in fixes)
    (title,) = [f["title"] for f in report["findings"] if f["code"] == "recompiles"]
    assert title.endswith("8 variants, one per instance of the 10 modules compiled one by one")
    (limit,) = [f for f in report["findings"] if f["code"] == "recompile_limit_hit"]
    assert "raising the limit to cover them is the fix here" in limit["advice"]
    assert frame["variants"] == 8  # the limit stops at 8; two layers run eagerly
    graphs, stderr = tried_graphs(run)  # the fix, applied (--try-fixes: recompile_limit = 10)
    assert graphs == 10 and "recompile_limit" not in stderr


def test_the_lr_schedulers_break_at_optimizer_step_is_by_design(doctor_run: Any) -> None:
    """A compiled optimizer step under an LR scheduler breaks at the user's
    ``optimizer.step()``: the scheduler's wrapper lives in a file Dynamo skips. Harmless, as
    said: Adam's own step is compiled as a frame of its own (a graph of its update)."""
    program = REAL / "optimizer_scheduler.py"
    run = corpus_run(doctor_run, "real_opt_sched")
    report = _report(run)
    (site,) = [b for b in report["graph_breaks"] if b["site"]["line"] == marker_in(program, "step")]
    assert "torch/optim/lr_scheduler.py" in site["reason"]  # the raw reason names the wrapper
    assert site["by_design"] is True
    assert "dont_skip_tracing" not in site["advice"] and "custom op" not in site["advice"]
    (finding,) = [f for f in report["findings"] if f["code"] == "graph_break"
                  and f["subject"].get("file") == str(program)
                  and f["subject"].get("line") == site["site"]["line"]]  # fmt: skip
    assert finding["severity"] == "info"
    adam = [c for c in report["compiles"] if c["function"] == "step"
            and (c["file"] or "").endswith("torch/optim/adam.py")]  # fmt: skip
    assert adam and adam[0]["graph_count"] == 1 and adam[0]["graph_op_count"] > 20


def test_diff_of_the_raised_limit_reads_as_the_improvement_it_is(
    doctor_run: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The regional-compilation fix, diffed: more variants (8 → 10) because A's count was capped
    at the limit and its last layers ran eagerly. Not a regression; the frame is named as the
    report names it."""
    pytest.importorskip("transformers")
    from pt2doctor.cli import main

    before = corpus_run(doctor_run, "real_regional")
    after = doctor_run("real_regional_limit", (), "../real/llama_regional", "--limit")
    assert after.returncode == 0, after.stderr[-2000:]
    assert main(["diff", str(before.run_dir), str(after.run_dir), "--format", "json"]) == 0
    changes = json.loads(capsys.readouterr().out)["changes"]
    (frame,) = [c for c in changes if c["kind"] == "frame"]
    assert (frame["before"], frame["after"], frame["regression"]) == (8, 10, False)
    assert frame["subject"].startswith("LlamaDecoderLayer.forward_with_checkpointing (")
    assert "limit hit → not hit: A ran new inputs eagerly past the limit" in frame["detail"]


def test_a_partial_last_batch_is_named_and_drop_last_removes_its_recompile(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    """200 samples in batches of 16: each epoch's last batch has 8. The recompile is named as
    the partial last batch, with the calls at 16 before it (the probes' heat), and
    ``drop_last=True``, as the fix says, leaves one graph. A tensor in ``args[0]`` is not the
    frame's ``self``: the frame is not called ``Tensor.forward``."""
    program = REAL / "partial_batch.py"
    report = _report(corpus_run(doctor_run, "real_partial_batch"))
    (frame,) = [f for f in report["frames"] if f["variants"] > 1]
    assert not frame["display_name"].startswith("Tensor.")
    (fix,) = [f for f in frame["fixes"] if "partial last batch" in f]
    assert fix.startswith("args[0].shape[0] went from 16 to 8 once, after 12 calls at 16")
    assert "drop_last=True" in fix
    (title,) = [f["title"] for f in report["findings"] if f["code"] == "recompiles"]
    assert title.endswith("2 variants: a smaller last batch")
    assert frame["variants_table"][0]["calls"] == 200 // 16  # 12 full batches before the 8
    assert frame["variants"] == 2
    assert _graphs(program, "--drop-last", env=run_env)[0] == 1  # the fix, applied


def test_generate_with_a_static_cache_is_told_it_already_has_one(doctor_run: Any) -> None:
    """``generate(..., cache_implementation="static")``: the guards type the cache
    (StaticCache), and the two variants are the prefill and the decode step, by design. The
    report no longer tells the user to use the static cache they use, nor that its length
    grows every step."""
    pytest.importorskip("transformers")
    run = corpus_run(doctor_run, "real_generate_static")
    report = _report(run)
    guards = [p for e, p in raw_records(run.run_dir / "trace") if "dynamo_cpp_guards_str" in e]
    assert any("transformers.cache_utils.StaticCache" in g for g in guards)
    (frame,) = [f for f in report["frames"] if f["variants"] > 1]
    assert frame["variants"] == 2 and frame["outlook"]["bounded"] is True
    (fix,) = frame["fixes"]
    assert fix.startswith("This is Hugging Face generate() with a static KV cache (StaticCache")
    assert "grows every step" not in fix and 'cache_implementation="static"' not in fix
    (finding,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert finding["severity"] == "info" and "a static cache compiles fewer" not in finding["title"]


def test_dynamic_padding_marks_every_tensor_that_shares_the_length(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    """BERT classification over batches padded to their longest sequence, called
    ``model(**batch)``: input_ids and attention_mask share the length. One fix names both, as
    the tensors the user passes; applied, one graph; marking input_ids alone, which it says
    does not do, leaves the recompile."""
    pytest.importorskip("transformers")
    program = REAL / "bert_dynamic_padding.py"
    run = corpus_run(doctor_run, "real_bert_padding")
    report = _report(run)
    fixes = [f for f in _fixes(report) if "maybe_mark_dynamic" in f]
    assert len(fixes) == 1  # one fix for the shared size, not one sentence per tensor
    (fix,) = fixes
    assert "torch._dynamo.maybe_mark_dynamic(batch['input_ids'], 1) and " \
        "torch._dynamo.maybe_mark_dynamic(batch['attention_mask'], 1)" in fix  # fmt: skip
    assert "one left static pins it" in fix
    assert f"at {program.name}:" in fix  # the line that passes them
    assert [f["variants"] for f in report["frames"] if f["variants"] > 1] == [2]
    assert tried_graphs(run)[0] == 1  # the fix, applied (--try-fixes: both marks)
    assert _graphs(program, "--mark-ids", env=run_env)[0] == 2  # one left static pins it


def test_a_tensor_passed_by_keyword_is_marked_by_the_name_the_calling_line_gives_it(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    """GPT-2 called ``compiled(input_ids=ids)`` on prompts of four lengths: Dynamo sees
    ``kwargs['input_ids']`` (transformers' wrapper). The fix names ``ids`` and the calling
    line, the mark as the program would write it; applied as printed (``--mark``) and by
    ``--try-fixes``, one graph, and the logits' checksum is the unfixed run's."""
    pytest.importorskip("transformers")
    program = REAL / "gpt2_keyword_lengths.py"
    run = corpus_run(doctor_run, "real_gpt2_keyword")
    report = _report(run)
    (fix,) = [f for f in _fixes(report) if "maybe_mark_dynamic" in f]
    assert "torch._dynamo.maybe_mark_dynamic(ids, 1)" in fix
    assert f"at {program.name}:{marker_in(program, 'call')} " in fix
    assert "batch[" not in fix
    checksum = re.compile(r"^checksum: (\S+)$", re.M)
    before = checksum.search((run.run_dir / "stdout.log").read_text())
    assert before and tried_graphs(run)[0] == 1
    tried = checksum.search((run.run_dir / "tries" / "1" / "stdout.log").read_text())
    assert tried and float(tried[1]) == pytest.approx(float(before[1]), rel=1e-5)
    done = subprocess.run([sys.executable, str(program), "--mark"], env=run_env, text=True,
                          capture_output=True, timeout=300, check=False)  # fmt: skip
    marked = checksum.search(done.stdout)
    assert "graphs: 1" in done.stdout and marked
    assert float(marked[1]) == pytest.approx(float(before[1]), rel=1e-5)


def test_generate_with_the_default_cache_is_bounded_and_the_static_cache_compiles_fewer(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    """GPT-2 ``generate()`` with the default (dynamic) cache over two prompt lengths: prefill and
    decode, each static then dynamic, 4 variants, bounded. The fix names the static cache and
    says marks cannot reach the tensors generate() builds; applied (``--static``), the decode
    step compiles once: one graph fewer."""
    pytest.importorskip("transformers")
    program = REAL / "gpt2_generate_dynamic.py"
    report = _report(corpus_run(doctor_run, "real_generate_dynamic"))
    (frame,) = [f for f in report["frames"] if f["variants"] > 1]
    assert frame["variants"] == 4 and frame["outlook"]["bounded"] is True
    (fix,) = frame["fixes"]
    assert fix.startswith("This is Hugging Face generate(): the prefill")
    assert 'cache_implementation="static", max_length=N' in fix
    assert "no tensor you hold reaches the compiled forward" in fix
    assert "before the first call" not in fix  # no mark the user cannot apply
    (finding,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert finding["severity"] == "info"
    assert _graphs(program, "--static", env=run_env)[0] == frame["variants"] - 1  # the fix, applied


def test_an_encoder_decoder_generate_is_told_the_static_cache_and_one_prompt_length(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    """T5 ``generate()`` over three sentence lengths: the first decoder step and the decode
    steps, the self-attention cache growing and the encoder length changing, 6 variants. The
    fix says static cache and one padded prompt length, "two variants in all"; applied
    (``--static``), two graphs."""
    pytest.importorskip("transformers")
    program = REAL / "t5_generate.py"
    report = _report(corpus_run(doctor_run, "real_t5_generate"))
    (frame,) = [f for f in report["frames"] if f["variants"] > 1]
    assert frame["variants"] == 6 and frame["outlook"]["bounded"] is True
    (fix,) = frame["fixes"]
    assert fix.startswith("This is Hugging Face generate() on an encoder-decoder model")
    assert "two variants in all" in fix
    assert _graphs(program, "--static", env=run_env)[0] == 2  # the fix, applied


def test_a_vision_model_whose_first_batch_has_one_image_is_told_the_zero_one_rule_first(
    doctor_run: Any,
) -> None:
    """ViT over batches of 1, 2, 4 and 8: size 1 is specialized, size 2 recompiles dynamic. The
    fix leads with the 0/1 rule (a mark alone changes nothing) and tries the mark with
    backed_size_oblivious: one graph for every batch size, measured by the re-run."""
    pytest.importorskip("transformers")
    run = corpus_run(doctor_run, "real_vit")
    report = _report(run)
    (frame,) = [f for f in report["frames"] if f["variants"] > 1]
    assert frame["variants"] == 2
    assert [row["serves"] for row in frame["variants_table"]] == [
        {"kwargs['pixel_values'].shape[0]": "1"},
        {"kwargs['pixel_values'].shape[0]": "dynamic"},
    ]
    (fix,) = [f for f in frame["fixes"] if "maybe_mark_dynamic" in f]
    assert "The first call had size 1, and Dynamo always specializes sizes 0 and 1" in fix
    (finding,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    tried = finding["tried"]
    assert tried["verdict"] == "helped" and "backed_size_oblivious" in tried["fix"]
    assert tried_graphs(run)[0] == 1  # the fix, applied (--try-fixes)


def test_a_bucketed_server_with_dynamic_false_is_bounded_by_its_buckets(doctor_run: Any) -> None:
    """Requests padded to 16, 32 or 64 tokens under ``dynamic=False``: the sizes take new values
    at every recompile but come back (the probes count each variant's calls), so the variants
    are bounded by the buckets, by design. Not "unbounded, drop dynamic=False": one fix names
    both tensors, the buckets with their calls, and the user's setting."""
    pytest.importorskip("transformers")
    program = REAL / "bucketed_server.py"
    report = _report(corpus_run(doctor_run, "real_bucketed"))
    (frame,) = [f for f in report["frames"] if f["variants"] > 1]
    lengths = re.search(r"for length in \(([\d, ]+)\)", program.read_text())
    assert lengths is not None
    buckets = [next(b for b in (16, 32, 64) if b >= int(n)) for n in lengths[1].split(", ")]
    assert [row["calls"] for row in frame["variants_table"]] == [
        buckets.count(b) for b in (16, 32, 64)
    ]
    assert frame["outlook"]["bounded"] is True
    (fix,) = frame["fixes"]
    assert fix.startswith("kwargs['input_ids'].shape[1] and kwargs['attention_mask'].shape[1] "
                          "take 3 values that recur (16, 32 and 64: 6, 3 and 3 calls)")  # fmt: skip
    assert (
        f"dynamic=False in your torch.compile call at {program}:{marker_in(program, 'compile')}"
        in fix
    )
    (finding,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert finding["severity"] == "info" and not finding.get("tryable")
    assert "unbounded" not in finding["title"]


def test_a_unets_attention_blocks_are_repeated_modules_and_regional_compilation_fixes_it(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    """A diffusers UNet compiled whole: the attention processor's lines appear 8 times in one
    graph, each copy on its own module's weights (4 transformer blocks, 2 attentions each). Not
    "a loop, unrolled" with loop advice: repeated blocks, and compile_repeated_blocks. Applied
    (``--regional``), one graph per block width: 2 graphs for the 4 blocks."""
    pytest.importorskip("diffusers")
    report = _report(corpus_run(doctor_run, "real_unet"))
    assert not [f for f in report["findings"] if f["code"] == "unrolled_loop"]
    (finding,) = [f for f in report["findings"] if f["code"] == "repeated_blocks"]
    assert "diffusers/models/attention_processor.py) run 8 times in one graph" in finding["title"]
    assert "compile_repeated_blocks()" in finding["advice"] and "gains[i]" not in finding["advice"]
    graphs = [p for e, p in raw_records(corpus_run(doctor_run, "real_unet").run_dir / "trace")
              if "dynamo_output_graph" in e]  # fmt: skip
    (line,) = set(re.findall(r"# File: (\S+attention_processor\.py:\d+) in __call__, code: query = attn\.to_q\(",
                             graphs[0]))  # fmt: skip
    assert graphs[0].count(f"# File: {line} in __call__") == 8
    assert _graphs(REAL / "unet_denoise.py", "--regional", env=run_env)[0] == 2  # the fix, applied


def test_unet_resnet_copies_of_their_own_shapes_are_not_told_regional_compilation_shortens_it(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    """A UNet2DModel compiled whole: ResnetBlock2D's lines 8 times in one graph, but the
    copies' weights come in 7 shapes, and regional compilation shares a graph only between
    copies of one shape. The report says how many shapes and that it is unlikely to shorten
    the compile (info, not a warning to act on). Applied (``--regional``), the program's own
    graph count is the number of shapes the report gave."""
    pytest.importorskip("diffusers")
    report = _report(corpus_run(doctor_run, "real_unet2d"))
    (finding,) = [f for f in report["findings"] if f["code"] == "repeated_blocks"]
    assert "diffusers/models/resnet.py) run 8 times in one graph" in finding["title"]
    regional, _ = _graphs(REAL / "unet2d_denoise.py", "--regional", env=run_env)
    assert (
        regional > 4 and f"the 8 copies' weights come in {regional} shapes" in finding["evidence"]
    )
    assert finding["severity"] == "info" and "unlikely to shorten the compile" in finding["advice"]
    assert "It shortens the compile" not in finding["advice"]
    assert _graphs(REAL / "unet2d_denoise.py", env=run_env)[0] == 1


def test_the_frames_a_logging_break_splits_off_are_one_cause_with_the_break(
    doctor_run: Any, run_env: dict[str, str]
) -> None:
    """A GPT-2 fine-tune's compiled step: transformers' loss_function logs inside forward, a
    break that splits the step into six frames, each recompiling once for the batch length.
    Their six recompiles findings share the break's cause (one block in every report), the
    loss and output frames the break split off get no mark on tensors the library made, and
    the break's fix, applied (``--loss-type``), halves the graphs."""
    pytest.importorskip("transformers")
    program = REAL / "gpt2_finetune_logging.py"
    report = _report(corpus_run(doctor_run, "real_finetune_logging"))
    (site,) = [f for f in report["findings"] if f["code"] == "graph_break"]
    recompiles = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert len(recompiles) == 6 and {f["cause"] for f in recompiles} == {site["cause"]}
    assert site["cause"].endswith("transformers/modeling_utils.py:" + str(
        next(b for b in report["graph_breaks"])["site"]["line"]))  # fmt: skip
    assert 'model.loss_type = "ForCausalLM"' in site["advice"]
    split_off = [f for f in recompiles if f["title"].startswith(("ForCausalLMLoss", "Causal"))]
    assert len(split_off) == 2
    for finding in split_off:
        assert "maybe_mark_dynamic" not in finding["advice"], finding["advice"]
        assert "nothing of yours to mark" in finding["advice"]
    from pt2doctor.report.markdown import render_markdown

    markdown = render_markdown(report)
    assert markdown.count("`recompiles`") == 0  # no block of its own: under the break
    assert "also recompiles of 6 frames it split off (train\\_step, " in markdown
    graphs = report["summary"]["graphs"]  # what Dynamo compiled in the run: 4
    assert _graphs(program, "--loss-type", env=run_env)[0] == graphs // 2  # the fix, applied


def test_a_call_counter_in_forward_is_a_counter_and_its_fix_ends_the_limit_hit(
    doctor_run: Any,
) -> None:
    """A hand-written LM whose forward reads ``self.calls`` (a warmup ramp): one variant per
    call until the limit. Named a counter at the user's line, shown as one block with its
    limit hit, the evidence of seven recompiles in one line; allow_unspec_int_on_nn_module,
    tried, ends the limit hit: 2 graphs in the re-run."""
    program = REAL / "lm_call_counter.py"
    run = corpus_run(doctor_run, "real_call_counter")
    report = _report(run)
    (recompiles,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    (limit,) = [f for f in report["findings"] if f["code"] == "recompile_limit_hit"]
    assert recompiles["cause"] == limit["cause"]  # one block in every report
    assert "self.calls is an int attribute of an nn.Module that takes a new value" in (
        recompiles["advice"])  # fmt: skip
    assert (
        f"read at {program}:{marker_in(program, 'read')} (`self.calls += 1" in recompiles["advice"]
    )
    assert "0/1–0/7: self.calls value 0 → 1 → … → 7" in recompiles["evidence"]
    assert not [e for e in recompiles["evidence"] if "None" in e]
    tried = recompiles["tried"]
    assert tried["verdict"] == "helped" and "allow_unspec_int_on_nn_module" in tried["fix"]
    assert (tried["before"]["limit_hits"], tried["after"]["limit_hits"]) == (1, 0)
    graphs, stderr = tried_graphs(run)  # the fix, applied (--try-fixes)
    assert graphs == 2 and "recompile_limit" not in stderr


CORPUS = {  # key: (pt2doctor run flags, program): one run per key, shared by the tests
    "real_rotary": (("--try-fixes", "2"), "../real/rotary_lm"),  # nothing to try: no re-run
    "real_bert_static": (TRY_ONE, "../real/bert_dynamic_false"),
    "real_regional": (TRY_ONE, "../real/llama_regional"),
    "real_opt_sched": ((), "../real/optimizer_scheduler"),
    "real_partial_batch": ((), "../real/partial_batch"),
    "real_generate_static": ((), "../real/llama_generate_static"),
    "real_bert_padding": (TRY_ONE, "../real/bert_dynamic_padding"),
    "real_gpt2_keyword": (TRY_ONE, "../real/gpt2_keyword_lengths"),
    "real_finetune_eval": (("--try-fixes", "3"), "../real/llama_finetune_eval"),
    "real_generate_dynamic": ((), "../real/gpt2_generate_dynamic"),
    "real_t5_generate": ((), "../real/t5_generate"),
    "real_vit": (TRY_ONE, "../real/vit_batches"),
    "real_bucketed": (TRY_ONE, "../real/bucketed_server"),  # nothing to try: warm-up is code
    "real_unet": ((), "../real/unet_denoise"),
    "real_unet2d": ((), "../real/unet2d_denoise"),
    "real_finetune_logging": ((), "../real/gpt2_finetune_logging"),
    "real_call_counter": (TRY_ONE, "../real/lm_call_counter"),
    "real_llama_collate": (("--backend", "eager", *TRY_ONE), "../real/llama_collate_train"),
}
_LIBRARY_LINE = re.compile(r"at (\S*(?:site-packages|/torch/|transformers/|nn/modules/)\S*):\d+")


@pytest.mark.parametrize("key", sorted(CORPUS))
def test_no_fix_asks_the_user_to_edit_a_library(doctor_run: Any, key: str) -> None:
    """Every fix and advice the corpus produces: none tells the user to rewrite or edit a line
    of torch or a dependency (a library line may be named as where a break or guard is, with
    the user's way out, never as the line to change)."""
    if key not in ("real_rotary", "real_opt_sched", "real_partial_batch", "real_call_counter"):
        pytest.importorskip("diffusers" if key.startswith("real_unet") else "transformers")
    report = _report(corpus_run(doctor_run, key))
    texts = _fixes(report) + [f["advice"] for f in report["findings"]]
    texts += [site["advice"] for site in report["graph_breaks"]]
    for text in texts:
        for sentence in re.split(r"(?<=[.;])\s+", text):
            if re.search(r"\b(Rewrite|rewrite|edit|Edit) (that|this) line", sentence):
                assert not _LIBRARY_LINE.search(text), text


def test_a_whole_compiled_hf_model_behind_a_library_decorator_gets_the_marks_that_work(
    doctor_run: Any,
) -> None:
    """torch.compile(model) on a Llama whose forward is behind transformers' decorator: the
    first frame Dynamo compiles is library code, and it is the entry of the user's compiled
    call, not a frame split off by a break (there is none). Its batch dims, dynamic after
    recompiles, get marks on the tensors the collate made, grouped by tensor; the eval's
    flags are by design. The marks, applied by --try-fixes, remove the length and batch
    recompiles (outside review: 4 graphs -> 2) and the losses are the same."""
    pytest.importorskip("transformers")
    run = corpus_run(doctor_run, "real_llama_collate")
    report = _report(run)
    assert report["summary"]["graph_breaks"] == 0
    (finding,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert "nothing of yours to mark" not in finding["advice"]
    for name in ("input_ids", "attention_mask", "labels"):
        assert f"torch._dynamo.maybe_mark_dynamic(batch['{name}'], [0, 1])" in finding["advice"]
    tried = finding["tried"]
    assert tried["verdict"] == "helped", tried
    assert tried["after"]["compiles"] < tried["before"]["compiles"]
    folder = run.run_dir / "tries" / "1"
    fixed = (folder / "stdout.log").read_text()
    graphs = int(re.search(r"^graphs: (\d+)$", fixed, re.M)[1])  # type: ignore[index]
    original = (run.run_dir / "stdout.log").read_text()
    assert graphs < int(re.search(r"^graphs: (\d+)$", original, re.M)[1])  # type: ignore[index]
    result = re.compile(r"^result: .*$", re.M)
    assert result.search(fixed)[0] == result.search(original)[0]  # type: ignore[index]
