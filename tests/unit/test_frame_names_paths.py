"""Frame display names and display paths: pure functions, on hand-built inputs."""

from __future__ import annotations

import io

from rich.console import Console

from pt2doctor.analysis.paths import display_path, library_path, shorten_paths
from pt2doctor.analysis.recompiles.frame_names import display_name
from pt2doctor.analysis.recompiles.ledger import CompileEntry, FrameEntry
from pt2doctor.report.terminal import render_terminal
from pt2doctor.trace.guard_tree import self_type
from pt2doctor.trace.records import CompileId
from pt2doctor.trace.types import CompileRecord, SourceLine

SITE = "/venv/lib/python3.11/site-packages"
MODULE_CALL = SourceLine(f"{SITE}/torch/nn/modules/module.py", 1778, "_wrapped_call_impl")


def frame(function: str, file: str, caller: SourceLine | None, cls: str | None) -> FrameEntry:
    record = CompileRecord(
        compile_id=CompileId(0, 0), stream="s", function=function, file=file, line=1030
    )
    record.caller, record.self_type = caller, cls
    entry = CompileEntry(record=record, cause="first_compile", function=function)
    return FrameEntry("s", 0, function, file, 1030, compiles=[entry])


def test_a_library_wrapper_called_by_a_module_names_the_forward_and_the_wrapper() -> None:
    gpt2 = "transformers.models.gpt2.modeling_gpt2.GPT2LMHeadModel"
    wrapper = frame("wrapper", f"{SITE}/transformers/utils/generic.py", MODULE_CALL, gpt2)
    assert display_name(wrapper) == (
        "GPT2LMHeadModel.forward (through transformers' wrapper at utils/generic.py:1030)"
    )


def test_the_function_name_when_nothing_better_is_known() -> None:
    direct = SourceLine("/app/main.py", 3, "main")
    assert display_name(frame("wrapper", "/app/deco.py", direct, "app.Net")) == "wrapper"
    # Called by nn.Module.__call__, the method is forward even when self's class is unknown
    # (torch's own compile wrapper gets the input tensor in args[0], not self).
    assert display_name(frame("wrapper", "/app/deco.py", MODULE_CALL, None)) == (
        "forward (through wrapper at deco.py:1030)"
    )
    assert display_name(frame("step", "/app/train.py", direct, None)) == "step"
    assert display_name(frame("forward", "/app/net.py", MODULE_CALL, "app.net.Net")) == (
        "Net.forward"
    )
    resume = "torch_dynamo_resume_in_forward_at_12"
    assert display_name(frame(resume, "/app/net.py", None, "app.net.Net")) == resume


def test_self_type_comes_from_the_guard_managers_line() -> None:
    tree = (
        "+- RootGuardManager\n"
        "| +- GuardManager: source=L['self'], accessed_by=FrameLocalsGuardAccessor(key='self', "
        "framelocals_idx=0), type=<class 'transformers.models.gpt2.modeling_gpt2.GPT2Model'>, "
        "tag_safe=(False, False)\n"
    )
    assert self_type(tree) == "transformers.models.gpt2.modeling_gpt2.GPT2Model"
    assert (
        self_type(
            "+- RootGuardManager\n| +- GuardManager: source=L['x'], type=<class 'torch.Tensor'>\n"
        )
        is None
    )


def test_display_paths() -> None:
    assert library_path(f"{SITE}/transformers/utils/generic.py") == "transformers/utils/generic.py"
    assert library_path("/usr/lib/python3/dist-packages/numpy/core.py") == "numpy/core.py"
    assert library_path("/app/train.py") is None
    assert display_path("/app/src/train.py", "/app") == "src/train.py"
    assert display_path("/elsewhere/train.py", "/app") == "/elsewhere/train.py"
    assert display_path(None, "/app") == "?"
    text = f"Graph break at /app/train.py:12 in step; see {SITE}/torch/nn/modules/module.py:3"
    assert shorten_paths(text, "/app") == (
        "Graph break at train.py:12 in step; see torch/nn/modules/module.py:3"
    )


def test_terminal_at_80_columns_cuts_no_path() -> None:
    """A CI log (no TTY, 80 columns): every line fits, no cell ends in an ellipsis, and paths
    read from the working directory."""
    long_dir = "/home/ci/builds/very/long/checkout/path/of/the/project/examples"
    report = {
        "inputs": {"paths": [f"{long_dir}/trace"]},
        "summary": {
            "frames": 1,
            "compiles": 2,
            "recompiles": 1,
            "restarts": 0,
            "graphs": 2,
            "break_sites": 1,
            "failures": 0,
            "total_compile_time_s": 1.0,
            "cache": {},
        },
        "parse_stats": {"problems": 0, "unknown_kinds": []},
        "findings": [],
        "graph_breaks": [
            {
                "site": {"file": f"{long_dir}/serving_loop.py", "line": 42, "function": "step"},
                "category": "data_dependent_scalar",
                "occurrences": 2,
                "hits": 7,
                "gb_type": "Unsupported Tensor.item() call with capture_scalar_outputs=False",
            }
        ],
        "frames": [
            {
                "function": "wrapper",
                "file": f"{SITE}/transformers/utils/generic.py",
                "line": 1030,
                "variants": 2,
                "limit_hit": False,
                "skipped": False,
                "display_name": "GPT2LMHeadModel.forward (through transformers' wrapper at "
                "utils/generic.py:1030)",
                "name": "GPT2LMHeadModel.forward",
                "through": "transformers' wrapper at utils/generic.py:1030",
                "recompiles": [{"failed_guards": [{"category": "size"}]}],
            }
        ],
    }
    buffer = io.StringIO()
    render_terminal(report, Console(file=buffer, width=80, color_system=None), cwd=long_dir)
    text = buffer.getvalue()
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert "…" not in text
    cells = first_column_cells(text)
    assert cells[0] == "serving_loop.py:42step"  # relative to the working directory
    # The name a user knows first, then the frame's own place (no torch.compile call recorded).
    assert cells[1] == "GPT2LMHeadModel.forwardtransformers/utils/generic.py:1030"
    # With the run's torch.compile call: where the user compiled it, not the library's file.
    report["frames"][0]["compiled_at"] = {"file": f"{long_dir}/serve.py", "line": 12, "name": None}
    buffer = io.StringIO()
    render_terminal(report, Console(file=buffer, width=80, color_system=None), cwd=long_dir)
    assert (
        first_column_cells(buffer.getvalue())[1] == "GPT2LMHeadModel.forwardcompiledatserve.py:12"
    )


def first_column_cells(text: str) -> list[str]:
    """The first column of each table row, its folded lines joined (spaces dropped)."""
    cells: list[str] = []
    current = ""
    for line in text.splitlines():
        if line.startswith("│"):
            current += line.split("│")[1].replace(" ", "")
        elif current:
            cells.append(current)
            current = ""
    return cells


def test_documents_show_an_installed_packages_file_from_the_package() -> None:
    """HTML and Markdown name a library file from its package, as the terminal does; the user's
    own file keeps its absolute path (a document outlives the working directory)."""
    from pt2doctor.report.format import function_where, source_where

    site = {"file": f"{SITE}/transformers/models/gpt2/modeling_gpt2.py", "line": 621}
    assert source_where({**site, "function": "forward"}) == (
        "transformers/models/gpt2/modeling_gpt2.py:621 forward"
    )
    assert function_where({**site, "function": "forward"}) == (
        "forward (transformers/models/gpt2/modeling_gpt2.py:621)"
    )
    mine = {"file": "/app/train.py", "line": 7, "function": "step"}
    assert source_where(mine) == "/app/train.py:7 step"


def test_a_wrapper_taking_args_names_the_class_of_args_0() -> None:
    """``model.forward = torch.compile(model.forward)`` on a forward decorated with
    transformers' ``deprecate_kwarg``: the frame is ``wrapped_func(*args, **kwargs)`` and self
    is ``args[0]``, which the guard tree types."""
    from pt2doctor.trace.guard_tree import first_arg_type

    llama = "transformers.models.llama.modeling_llama.LlamaForCausalLM"
    tree = (
        "+- RootGuardManager\n"
        "| +- GuardManager: source=L['args'], accessed_by=FrameLocalsGuardAccessor(key='args', "
        "framelocals_idx=0), type=<class 'tuple'>, tag_safe=(False, False)\n"
        "| | +- GuardManager: source=L['args'][0], accessed_by=TupleGetItemGuardAccessor(0), "
        f"type=<class '{llama}'>, tag_safe=(False, False)\n"
    )
    assert first_arg_type(tree) == llama and self_type(tree) is None
    wrapper = frame("wrapped_func", f"{SITE}/transformers/utils/deprecation.py", MODULE_CALL, None)
    wrapper.compiles[0].record.first_arg_type = llama
    assert display_name(wrapper) == (
        "LlamaForCausalLM.forward (through transformers' wrapped_func at utils/deprecation.py:1030)"
    )
    # A function of the user's that takes *args is not a method of its first argument's class.
    step = frame("step", "/app/train.py", SourceLine("/app/main.py", 3, "main"), None)
    step.compiles[0].record.first_arg_type = llama
    assert display_name(step) == "step"


def test_a_run_reported_from_inside_its_own_directory_is_named_dot() -> None:
    """`pt2doctor report .` in a run directory: its logs read as trace/x.log, and the title
    names the directory (it said 'pt2doctor report — ?')."""
    from pt2doctor.report.format import report_inputs

    report = {"run": {}, "inputs": {"paths": ["trace/dedicated_log_torch_trace_x.log"]}}
    assert report_inputs(report) == ["."]
    report["inputs"]["paths"] = ["runs/a/trace/dedicated_log_torch_trace_x.log"]
    assert report_inputs(report) == ["runs/a"]
