"""``pt2doctor.compare_modules``: where compiled numbers leave eager's, found by compiling
modules alone on eager's recorded inputs. Each truth is established here independently: the
culprit compiled alone really differs from eager, and its siblings do not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "programs" / "numerics"))

import models  # noqa: E402

import pt2doctor  # noqa: E402


def _alone(module: torch.nn.Module, x: torch.Tensor, backend: object) -> torch.Tensor:
    torch.compiler.reset()
    with torch.no_grad():
        return torch.compile(module, backend=backend)(x)


def test_a_planted_relu_error_is_found_in_the_one_block_that_calls_relu() -> None:
    torch.manual_seed(0)
    model, x = models.Net().eval(), torch.randn(8, 16)
    found = pt2doctor.compare_modules(model, x, backend="relu_accuracy_error_TESTING_ONLY")
    assert found.diverges
    assert [step.name for step in found.path] == ["", "blocks.2", "blocks.2.ff", "blocks.2.ff.act"]
    assert found.culprit == "blocks.2.ff.act" and not found.fused
    lines = Path(models.__file__).read_text().splitlines()
    act_forward = (
        lines.index("class Act(nn.Module):")
        + 1
        + next(
            n
            for n, text in enumerate(lines[lines.index("class Act(nn.Module):") :])
            if "def forward" in text
        )
    )
    assert found.culprit_source == f"{models.__file__}:{act_forward}"
    # blocks 0 and 1 were compiled and passed; block 3 and the head never had to be.
    checked = {c.name: c.introduces for c in found.checked}
    assert checked["blocks.0"] is False and checked["blocks.1"] is False
    assert "blocks.3" not in checked and "head" not in checked
    # The truth, measured here: the culprit alone is off by the planted +1, its sibling is not.
    with torch.no_grad():
        h = model.blocks[2].ff.up(model.blocks[2].norm(x))
    act = model.blocks[2].ff.act
    assert torch.allclose(
        _alone(act, h, "relu_accuracy_error_TESTING_ONLY") - h, torch.ones_like(h)
    )
    assert torch.equal(_alone(model.blocks[1], x, "relu_accuracy_error_TESTING_ONLY"),
                       model.blocks[1](x).detach())  # fmt: skip
    # The whole compiled run, recorded on the descent path's modules (only they: each recorded
    # output is an output of the compiled graph): block 2 is the first, and it already fails.
    rows = [row["module"] for row in found.inherited]
    assert rows == [step.name for step in found.path if step.name]
    assert rows[0] == "blocks.2" and not found.inherited[0]["passed"]
    assert found.hooks_kept_failure is True
    assert "culprit: blocks.2.ff.act (Act)" in found.summary()
    # The tree table: each row's class's forward where the user wrote it, and the error it
    # inherited (its input in the whole compiled run against eager's) apart from the error
    # in its output: the act's input is eager's to the last bits, its output off by the +1.
    from pt2doctor.ablate.render import numerics_rows

    table = numerics_rows({"numerics": found.as_dict()})  # type: ignore[typeddict-item]
    assert [row["module"] for row in table] == ["<model>", "blocks.2", "blocks.2.ff",
                                               "blocks.2.ff.act"]  # fmt: skip
    assert table[-1]["source"] == found.culprit_source
    assert table[0]["source"].startswith(f"{models.__file__}:")  # Net's forward
    assert table[0]["inherited_error"] == 0.0
    act_row = table[-1]
    assert act_row["inherited_error"] is not None and act_row["inherited_error"] < 1e-4
    assert act_row["whole_run_error"] == pytest.approx(1.0, abs=1e-4)
    assert found.kernels == [] and found.bisected is None  # not Inductor: no kernels to name


@pytest.mark.torch_run  # Inductor
def test_an_inductor_codegen_bug_no_knob_clears_is_named_by_the_bisector_and_its_kernel() -> None:
    """Net under Inductor with its C++ relu planted wrong (``cpp.inject_relu_bug_TESTING_ONLY
    = "accuracy"``: relu computes x + 1): no knob clears the culprit and Dynamo alone is right,
    so compiler_bisector runs on the culprit alone, and names Inductor's lowering of relu;
    the culprit's one generated kernel is named with the user's line it came from."""
    from torch._inductor import config as inductor_config

    torch.manual_seed(0)
    model, x = models.Net().eval(), torch.randn(8, 16)
    planted = {"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}
    with inductor_config.patch(planted):
        found = pt2doctor.compare_modules(model, x)
        with torch.no_grad():  # the truth: act alone computes x + 1
            h = torch.randn(8, 32)
            act = model.blocks[2].ff.act
            off = _alone(act, h, "inductor") - h
    assert torch.allclose(off, torch.ones_like(h))
    assert found.culprit == "blocks.2.ff.act", found.summary()
    assert found.cleared_by is None and found.dynamo_only is False
    assert found.bisected is not None
    assert (found.bisected["backend"], found.bisected["subsystem"]) == ("inductor", "lowerings")
    assert found.bisected["debug_info"] == "relu"
    said = found.summary()
    assert (
        "compiler_bisector on the culprit alone: switching off Inductor's lowering of relu" in said
    )
    relu_line = next(n for n, text in enumerate(Path(models.__file__).read_text().splitlines(), 1)
                     if "return torch.relu(x) if self.relu" in text)  # fmt: skip
    (kernel,) = found.kernels
    assert kernel["kind"] == "generated" and "relu" in kernel["ops"], kernel
    assert kernel["lines"] == [f"{models.__file__}:{relu_line}: "
                               "return torch.relu(x) if self.relu else F.gelu(x)"]  # fmt: skip
    assert f"kernel {kernel['name']} (generated: relu) from {models.__file__}:{relu_line}" in said


@pytest.mark.torch_run  # Inductor
def test_max_autotune_and_a_lower_matmul_precision_are_tried_at_the_culprit_when_set() -> None:
    """With max_autotune on and float32 matmul precision 'high', both are tried at the culprit
    (switched off, and 'highest'), alone, each as its own compile; a relu planted wrong in
    Inductor's C++ code is cleared by neither, and the bisector still names its lowering. A
    model without a matmul: max_autotune has nothing to autotune, the compiles stay cheap."""
    from torch._inductor import config as inductor_config

    torch.manual_seed(0)
    model = torch.nn.Sequential(models.Act(relu=False), models.Act(relu=True)).eval()
    x = torch.randn(8, 16)
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        planted = {"cpp.inject_relu_bug_TESTING_ONLY": "accuracy", "max_autotune": True}
        with inductor_config.patch(planted):
            found = pt2doctor.compare_modules(model, x)
    finally:
        torch.set_float32_matmul_precision(before)
    assert found.culprit == "1", found.summary()
    assert found.knobs == {
        "emulate_precision_casts=True": False, "fallback_random=True": False,
        "max_autotune=False": False, "float32_matmul_precision='highest'": False,
    }  # fmt: skip
    assert "with max_autotune=False it still fails" in found.summary()
    assert found.bisected is not None and found.bisected["debug_info"] == "relu"


@pytest.mark.torch_run  # Inductor
def test_hooks_that_hide_the_failure_are_said_and_the_search_still_names_the_culprit() -> None:
    """GLUNet under Inductor with ``single_user_sigmoid_pass``, which (as Inductor's own
    pattern passes do) rewrites a sigmoid only where its output has one user: the recording
    hook on glu.gate gives it a second one, so the whole model compiled with the hooks on is
    right. The search, each module compiled alone without hooks, still names glu.gate, and
    the report says the hooked run passed. The truth, measured here with plain torch."""
    from torch._inductor import config as inductor_config

    torch.manual_seed(0)
    model, x = models.GLUNet().eval(), torch.randn(8, 16)
    kept: list[torch.Tensor] = []
    with inductor_config.patch(post_grad_custom_post_pass=models.single_user_sigmoid_pass):
        found = pt2doctor.compare_modules(model, x)
        with torch.no_grad():
            eager = model(x)
            plain = _alone(model, x, "inductor")
            handle = model.glu.gate.register_forward_hook(
                lambda module, args, out: kept.append(out.detach().clone())
            )
            hooked = _alone(model, x, "inductor")
            handle.remove()
    assert not torch.allclose(plain, eager, atol=1e-4) and torch.allclose(hooked, eager, atol=1e-5)
    assert found.culprit == "glu.gate" and found.cleared_by == "post_grad_custom_post_pass=None"
    assert found.hooks_kept_failure is False
    assert all(row["passed"] for row in found.inherited)
    assert any("with the recording hooks on, the whole model passed" in n for n in found.notes)
    from pt2doctor.ablate.render import numerics_lines

    lines = numerics_lines({"numerics": found.as_dict()})  # type: ignore[typeddict-item]
    assert any("the whole-run columns are of a run that passed" in line for line in lines)


def test_an_error_only_when_two_modules_are_compiled_together_stops_at_their_parent() -> None:
    torch.manual_seed(0)
    model, x = models.GatedNet().eval(), torch.randn(8, 16)
    found = pt2doctor.compare_modules(model, x, backend=models.sigmoid_times_backend)
    assert found.culprit == "mix" and found.fused
    assert {c.name: c.introduces for c in found.checked if c.name.startswith("mix.")} == {
        "mix.gate": False, "mix.value": False,
    }  # fmt: skip
    assert found.fused_pair == ["mix.gate", "mix.value"]
    assert "appears only when mix.gate and mix.value are compiled together" in found.summary()
    with torch.no_grad():
        h = model.inp(x)
    assert not torch.allclose(_alone(model.mix, h, models.sigmoid_times_backend), model.mix(h))


def test_a_model_compiled_right_has_nothing_to_localize() -> None:
    torch.manual_seed(0)
    found = pt2doctor.compare_modules(models.Net().eval(), torch.randn(8, 16), backend="eager")
    assert not found.diverges and found.culprit is None and not found.checked
    assert "nothing to localize; its largest error: output max abs error " in found.summary()


@pytest.mark.torch_run  # Inductor
def test_inductor_s_rounding_within_tolerance_is_not_localized_and_its_error_is_named() -> None:
    """Inductor fuses a LayerNorm, a GELU MLP and a softmax into its own kernels: its float32
    results differ from eager's in the last bits (measured here with plain torch: nonzero, far
    under the 1e-4 tolerance). Nothing is localized, no module is compiled alone, and the
    summary names that largest honest error, not zero."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.LayerNorm(64), torch.nn.Linear(64, 256), torch.nn.GELU(),
        torch.nn.Linear(256, 64), torch.nn.Softmax(dim=-1),
    ).eval()  # fmt: skip
    x = torch.randn(32, 64)
    with torch.no_grad():
        eager = model(x)
    compiled = _alone(model, x, "inductor")
    truth = float((compiled - eager).abs().max())
    assert 0 < truth < 1e-4, truth
    found = pt2doctor.compare_modules(model, x, backend="inductor")
    assert not found.diverges and found.culprit is None and not found.checked
    assert found.whole["max_abs_error"] == pytest.approx(truth, rel=0.05)
    said = found.summary()
    assert "nothing to localize; its largest error: output max abs error " in said
    assert found.whole["max_abs_error"] > 0 and f"error {found.whole['max_abs_error']}" in said


@pytest.mark.torch_run  # the repro runs as its own torch program
def test_a_user_pass_bug_is_found_cleared_by_the_pass_off_and_reproduced_alone(
    tmp_path: Path,
) -> None:
    """Net under Inductor with ``shift_relu_pass`` (relu -> relu + 0.5) as the post-grad
    pass: the culprit is blocks.2.ff.act, the only module with a relu; of the knobs tried on
    it alone, only the pass off clears it. The repro written beside it, copied to an empty
    folder, runs with torch only and reproduces (exit 1); the truth is measured here too."""
    import shutil
    import subprocess

    from torch._inductor import config as inductor_config

    torch.manual_seed(0)
    model, x = models.Net().eval(), torch.randn(8, 16)
    with inductor_config.patch(post_grad_custom_post_pass=models.shift_relu_pass):
        # Each compile in a forked child (as with large recordings): the pass the parent
        # set is the child's too, and the knob that switches it off reaches the child.
        found = pt2doctor.compare_modules(model, x, repro_dir=tmp_path / "repro", isolate=True)
        assert found.notes and "forked child" in found.notes[0]
        with torch.no_grad():  # the truth: act alone, with the pass, on its eager input
            h = model.blocks[1](model.blocks[0](x))
            h = model.blocks[2].ff.up(model.blocks[2].norm(h))
            act = model.blocks[2].ff.act
            shifted = _alone(act, h, "inductor") - torch.relu(h)
    assert torch.allclose(shifted, torch.full_like(h, models.SHIFT))
    assert found.culprit == "blocks.2.ff.act", found.summary()
    assert found.knobs["post_grad_custom_post_pass=None"] is True
    assert found.knobs["emulate_precision_casts=True"] is False
    assert found.knobs["fallback_random=True"] is False
    assert found.cleared_by == "post_grad_custom_post_pass=None"
    assert "with post_grad_custom_post_pass=None it passes" in found.summary()
    assert found.cleared_because is not None
    assert "post_grad_custom_post_pass pass shift_relu_pass (" in found.cleared_because
    assert f"{models.__file__}:" in found.cleared_because
    repro = found.repro
    assert repro is not None and repro["standalone"] and repro["lines"] < 100
    alone = tmp_path / "alone"
    shutil.copytree(tmp_path / "repro", alone)
    sources = "".join(p.read_text() for p in alone.glob("*.py"))
    assert "import pt2doctor" not in sources and "from pt2doctor" not in sources
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    ran = subprocess.run([sys.executable, "repro.py"], cwd=alone, env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "WRONG NUMBERS" in ran.stdout and "reproduces: compiled leaves" in ran.stdout


def test_a_pattern_pass_on_a_linear_and_its_gelu_names_the_two_compiled_together() -> None:
    """FusedNet under Inductor with ``linear_gelu_pass`` (it perturbs a GELU only when the
    Linear feeding it is in the same graph): mlp introduces the error, none of its children
    alone does, nor its own code: it appears only when mlp.fc1 and mlp.act are compiled
    together. The truth, measured here: fc1 and act alone are right, the pair is not."""
    from torch._inductor import config as inductor_config

    torch.manual_seed(0)
    model, x = models.FusedNet().eval(), torch.randn(8, 16)
    with inductor_config.patch(post_grad_custom_post_pass=models.linear_gelu_pass):
        found = pt2doctor.compare_modules(model, x)
        with torch.no_grad():
            h = torch.tanh(model.inp(x))
            pair = torch.nn.Sequential(model.mlp.fc1, model.mlp.act)
            wrong_pair = not torch.allclose(_alone(pair, h, "inductor"), pair(h), atol=1e-4)
            fc1_ok = torch.allclose(_alone(model.mlp.fc1, h, "inductor"), model.mlp.fc1(h),
                                    atol=1e-4)  # fmt: skip
    assert wrong_pair and fc1_ok
    assert found.culprit == "mlp" and found.fused and not found.own_code, found.summary()
    assert found.fused_pair == ["mlp.fc1", "mlp.act"]
    assert "appears only when mlp.fc1 and mlp.act are compiled together (fused)" in found.summary()
    assert found.cleared_by == "post_grad_custom_post_pass=None"


ABLATE_PROGRAMS = Path(__file__).resolve().parents[1] / "programs" / "ablate"


def _ablate_program(name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"numerics_{name}", ABLATE_PROGRAMS / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_dropout_is_cleared_by_fallback_random_and_said_to_be_by_design() -> None:
    """dropout_train.py's model in train mode under Inductor: the culprit is the Dropout
    (torch's: no source line into torch), fed the generator state eager had at its call;
    fallback_random=True clears it, which is by design. The truth, measured here: compiled
    with fallback_random from the same seed equals eager."""
    from torch._inductor import config as inductor_config

    program = _ablate_program("dropout_train")
    torch.manual_seed(0)
    model, x = program.Model().train(), torch.randn(8, 16)
    found = pt2doctor.compare_modules(model, x)
    assert found.culprit == "blocks.0.drop" and found.culprit_kind == "Dropout", found.summary()
    assert found.culprit_source is None
    assert found.cleared_by == "fallback_random=True"
    assert found.cleared_because is not None and found.cleared_because.startswith("by design")
    with torch.no_grad(), inductor_config.patch(fallback_random=True):
        torch.manual_seed(1)
        eager = model(x)
        torch.compiler.reset()
        compiled = torch.compile(model)
        torch.manual_seed(1)
        assert torch.allclose(compiled(x), eager, atol=1e-6)


def test_a_bf16_chain_is_cleared_by_emulate_precision_casts() -> None:
    """bf16_casts.py's multiply chain in bfloat16 (tolerance 1e-3): the culprit is Scale, in
    its own code (it has no children); emulate_precision_casts=True clears it, by design."""
    from torch._inductor import config as inductor_config

    program = _ablate_program("bf16_casts")
    torch.manual_seed(0)
    model, x = program.Model().eval(), torch.randn(64, 64, dtype=torch.bfloat16)
    found = pt2doctor.compare_modules(model, x, tolerance=1e-3)
    assert found.culprit == "blocks.0" and found.culprit_kind == "Scale", found.summary()
    assert found.culprit_source is not None and "bf16_casts.py:" in found.culprit_source
    assert found.cleared_by == "emulate_precision_casts=True"
    assert found.knobs["fallback_random=True"] is False
    with torch.no_grad(), inductor_config.patch(emulate_precision_casts=True):
        assert torch.equal(_alone(model.blocks[0], x, "inductor"), model.blocks[0](x))


@pytest.mark.torch_run  # Inductor compiles of a GPT-2 and its parts: ~30-50 s on 2 cores
def test_a_pass_bug_in_one_gpt2_layer_s_mlp_names_that_layer_and_its_act() -> None:
    """A random-init GPT-2 (2 layers, no download) whose layer 1 MLP uses QuickGELU, under
    Inductor with bump_sigmoid_pass: the descent goes transformer -> h.1 -> mlp -> act (h.0
    compiled alone passes), and the pass off clears it."""
    transformers = pytest.importorskip("transformers")
    from torch._inductor import config as inductor_config

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100,
                                     n_positions=16, use_cache=False)  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    model.transformer.h[1].mlp.act = models.QuickGELU()
    ids = torch.randint(0, 100, (2, 8))
    with inductor_config.patch(post_grad_custom_post_pass=models.bump_sigmoid_pass):
        found = pt2doctor.compare_modules(model, input_ids=ids)
    assert [step.name for step in found.path][-3:] == [
        "transformer.h.1", "transformer.h.1.mlp", "transformer.h.1.mlp.act",
    ], found.summary()  # fmt: skip
    assert {c.name: c.introduces for c in found.checked}["transformer.h.0"] is False
    assert found.culprit_kind == "QuickGELU"
    assert found.cleared_by == "post_grad_custom_post_pass=None"
    assert found.hooks_kept_failure is True


def test_a_backward_bug_in_one_module_is_first_in_backward_order_and_found_alone() -> None:
    """TrainNet under a backend whose backward scales every tanh_backward by 1.5 (the forward
    is right): the whole run's gradients first diverge, in backward order, at squash.lin (the
    head's are right; inp's inherit it); teacher-forced, squash introduces it and the descent
    ends in it (tanh is its own code). The caller's model keeps no gradients."""
    torch.manual_seed(0)
    model, x = models.TrainNet(), torch.randn(8, 16)
    found = pt2doctor.compare_gradients(model, x, backend=models.tanh_backward_backend)
    assert found.diverges, found.summary()
    passed = {row["module"]: row["passed"] for row in found.modules}
    assert passed == {"head": True, "squash.lin": False, "inp": False}
    assert found.first == "squash.lin"
    assert [step.name for step in found.path] == ["", "squash"]
    checked = {c.name: c.introduces for c in found.checked}
    assert checked["head"] is False and checked["squash"] is True and "inp" not in checked
    assert found.culprit == "squash" and found.own_code
    assert all(p.grad is None for p in model.parameters())
    # The truth: squash alone, compiled with the backend, gets lin's gradient 1.5x eager's.
    torch.compiler.reset()
    h = torch.randn(8, 16)
    eager_lin = torch.autograd.grad(model.squash(h).sum(), model.squash.lin.weight)[0]
    compiled = torch.compile(model.squash, backend=models.tanh_backward_backend)
    compiled_lin = torch.autograd.grad(compiled(h).sum(), model.squash.lin.weight)[0]
    assert torch.allclose(compiled_lin, 1.5 * eager_lin, atol=1e-5)


def test_gradients_compiled_right_have_nothing_to_localize() -> None:
    torch.manual_seed(0)
    found = pt2doctor.compare_gradients(models.TrainNet(), torch.randn(8, 16), backend="eager")
    assert not found.diverges and found.first is None and not found.checked
    assert {row["module"] for row in found.modules} == {"inp", "squash.lin", "head"}
    assert "nothing to localize" in found.summary()


def test_a_custom_op_kernel_that_differs_from_the_eager_path_is_named() -> None:
    """OpNet: its act calls a custom op when compiling and torch's GELU in eager, and the op's
    kernel is off. The culprit is act; no Inductor knob clears it; compiled by Dynamo alone
    it still diverges, and its graph calls numerics_models::fast_gelu."""
    torch.manual_seed(0)
    model, x = models.OpNet().eval(), torch.randn(8, 16)
    found = pt2doctor.compare_modules(model, x)
    assert found.culprit == "act" and found.culprit_kind == "FastAct", found.summary()
    assert found.cleared_by is None and found.dynamo_only is True
    assert found.custom_ops == ["numerics_models::fast_gelu"]
    assert "its graph calls numerics_models::fast_gelu" in found.summary()
    with torch.no_grad():  # the truth: the op's kernel against the eager path
        h = model.inp(x)
        assert not torch.allclose(models.fast_gelu(h), model.act(h), atol=1e-3)


class _Scaled(torch.nn.Module):
    """Called with a function argument: its recording cannot be pickled to a file."""

    def __init__(self) -> None:
        super().__init__()
        self.ff = models.FF(relu=True)

    def forward(self, x: torch.Tensor, post: Any) -> torch.Tensor:
        return post(self.ff(x))


class _Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.scaled = torch.nn.LayerNorm(16), _Scaled()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scaled(self.norm(x), lambda t: t * 2)


def test_recordings_are_spilled_to_files_that_are_removed_after_and_an_unpicklable_one_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    # Temporary files of this test's own (another test's search may spill beside it).
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = set(Path(tempfile.gettempdir()).glob("pt2doctor-numerics-*"))
    torch.manual_seed(0)
    model, x = _Outer().eval(), torch.randn(8, 16)
    folders: list[set[Path]] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        # Called as each module is compiled: the recordings are files in the spill folder.
        folders.append(set(Path(tempfile.gettempdir()).glob("pt2doctor-numerics-*/*.pt")))
        compile_fx: Any = torch._dynamo.lookup_backend("relu_accuracy_error_TESTING_ONLY")
        return compile_fx(gm, example_inputs)

    found = pt2doctor.compare_modules(model, x, backend=backend)
    assert found.culprit == "scaled.ff.act"
    # norm's and scaled.ff's recordings (eager's and fp64's, in and out) were files; scaled's
    # own input (a lambda) stayed in memory, and its search still ran.
    assert any(len(files) >= 8 for files in folders)
    assert found.recorded_bytes >= 4 * x.numel() * x.element_size()
    assert set(Path(tempfile.gettempdir()).glob("pt2doctor-numerics-*")) == before


def test_checks_failing_training_cell_points_to_the_module_whose_backward_leaves_eager() -> None:
    """check's alignment of a training cell of TrainNet under the tanh_backward bug: the
    forward matches (compare_modules finds nothing), so the gradients are searched with the
    cell's own loss and compile: squash, whose forward the note names by file:line."""
    from pt2doctor.cases import Built, Case, Matrix
    from pt2doctor.cases.align import align_cell
    from pt2doctor.cases.case import cells
    from pt2doctor.check.where import where_note

    def build(cell: Any) -> Built:
        torch.manual_seed(0)
        return Built(models.TrainNet(), (torch.randn(8, 16),), loss=lambda out: out.pow(2).mean())

    case = Case("train", build, Matrix(shapes={"b8": 8}, train=(True,)), steps=2)
    [cell] = cells(case)
    torch.compiler.reset()
    found = align_cell(case, cell, lambda m: torch.compile(m, backend=models.tanh_backward_backend))
    assert found["verdict"] == "fail"
    where = found["where"]
    assert where["gradients"] is True and where["first"] == "squash.lin", where
    assert where["culprit"] == "squash" and where["own_code"] is True
    lines = Path(models.__file__).read_text().splitlines()
    start = lines.index("class Squash(nn.Module):")
    forward = start + 1 + next(n for n, t in enumerate(lines[start:]) if "def forward" in t)
    assert where["source"] == f"{models.__file__}:{forward}"
    assert where_note(where) == (f"backward (its gradients) leaves eager at squash (Squash, "
                                 f"models.py:{forward}) in its own code")  # fmt: skip


def test_checks_failing_cell_whose_build_sets_a_pass_is_cleared_by_that_pass_off() -> None:
    """A case whose build() installs shift_relu_pass (as a check case file does, before the
    model is made): check's Inductor cell fails, and its search tries the knobs at the culprit
    as compare_modules does, so the note names the program's pass and its line, and nothing
    says "report it upstream" (the bisector alone, without the knobs, had)."""
    from torch._inductor import config as inductor_config

    from pt2doctor.cases import Built, Case, Matrix
    from pt2doctor.cases.align import align_cell
    from pt2doctor.cases.case import cells
    from pt2doctor.check.where import where_note

    def build(cell: Any) -> Built:
        inductor_config.post_grad_custom_post_pass = models.shift_relu_pass
        torch.manual_seed(0)
        return Built(models.Net().eval(), (torch.randn(8, 16),))

    case = Case("net", build, Matrix(shapes={"b8": 8}, train=(False,)))
    [cell] = cells(case)
    torch.compiler.reset()
    with inductor_config.patch(post_grad_custom_post_pass=None):  # what build() sets, undone
        found = align_cell(case, cell, lambda m: torch.compile(m), inductor=True)
    assert found["verdict"] == "fail"
    where = found["where"]
    assert where["culprit"] == "blocks.2.ff.act" and where["cleared_by"] == (
        "post_grad_custom_post_pass=None"
    ), where
    assert "upstream" not in where["summary"]
    assert "pass shift_relu_pass (" in where_note(where)


def test_the_bisector_that_switches_off_the_program_s_own_pass_names_it_as_the_program_s() -> None:
    """With no knob tried, torch's compiler_bisector finds the subsystem on its own: the
    post-grad custom pass hook. That is the program's pass, so the meaning says to fix or drop
    it and never to report it upstream."""
    from torch._inductor import config as inductor_config

    torch.manual_seed(0)
    model, x = models.Net().eval(), torch.randn(8, 16)
    with inductor_config.patch(post_grad_custom_post_pass=models.shift_relu_pass):
        found = pt2doctor.compare_modules(model, x, try_knobs=False)
    assert found.culprit == "blocks.2.ff.act" and found.bisected is not None, found.summary()
    assert "post_grad_custom_post_pass" in str(found.bisected.get("debug_info"))
    meaning = found.bisected["meaning"]
    assert "the program's own pass set as post_grad_custom_post_pass" in meaning
    assert "upstream" not in meaning


def test_compiles_made_in_forked_children_find_what_compiles_made_here_find(
    tmp_path: Path,
) -> None:
    """``isolate=True`` (the default for large recordings): every compile of the search runs
    in a child process, which the backend sees as another pid; the search and its verdicts
    are the ones the in-process search gives, and this process compiled nothing."""
    import os

    pids = tmp_path / "pids"

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        with pids.open("a") as out:
            out.write(f"{os.getpid()}\n")
        compile_fx: Any = torch._dynamo.lookup_backend("relu_accuracy_error_TESTING_ONLY")
        return compile_fx(gm, example_inputs)

    torch.manual_seed(0)
    model, x = models.Net().eval(), torch.randn(8, 16)
    here = pt2doctor.compare_modules(model, x, backend=backend, isolate=False)
    assert set(pids.read_text().split()) == {str(os.getpid())}
    pids.unlink()
    forked = pt2doctor.compare_modules(model, x, backend=backend, isolate=True)
    compiled_in = pids.read_text().split()
    assert str(os.getpid()) not in compiled_in and len(set(compiled_in)) > 3
    assert forked.culprit == here.culprit == "blocks.2.ff.act"
    assert forked.notes and "forked child with one CPU thread" in forked.notes[0]
    forked.notes = here.notes = []
    assert forked.as_dict() == here.as_dict()


def test_the_repro_saves_the_module_s_structure_on_meta_and_its_weights_as_a_state_dict(
    tmp_path: Path,
) -> None:
    """culprit.pt: the module with its tensors on the meta device, its state_dict apart, and
    the non-persistent buffers a state_dict leaves out (the repro sets them back)."""
    from pt2doctor.cases.numerics_repro import write_repro

    module = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    module.register_buffer("scale", torch.tensor(2.0), persistent=False)
    x = torch.randn(2, 4)
    written = write_repro(tmp_path, module, ((x,), {}), ((x.double(),), {}), "inductor", 1e-4,
                          [], "blocks.0", None)  # fmt: skip
    saved = torch.load(tmp_path / "culprit.pt", weights_only=False)
    assert all(t.is_meta for t in saved["module"].state_dict().values())
    assert saved["state_dict"].keys() == module.state_dict().keys()
    assert all(torch.equal(saved["state_dict"][k], v) for k, v in module.state_dict().items())
    assert torch.equal(saved["buffers"]["scale"], torch.tensor(2.0))
    assert saved["device"] == "cpu" and written["lines"] < 100
