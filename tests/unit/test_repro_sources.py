"""How script-mode repros are made when no runnable graph exists, as pure file work: the
program copied with the modules beside it that it imports, torch's minifier output made
portable, and a custom op found in the module that registers it by its full name."""

from __future__ import annotations

from pathlib import Path

from pt2doctor.ablate.minifier import portable_graph
from pt2doctor.ablate.program_repro import local_imports, write_program_repro
from pt2doctor.ablate.script_repro import repro_imports

# The tail of a minifier repro as torch 2.13 writes it (after_dynamo, minified).
MINIFIED = """import os
os.environ['TORCH_COMPILE_DEBUG_DIR'] = '/tmp/mini/dbg'
os.environ['TORCHINDUCTOR_CACHE_DIR'] = '/tmp/torchinductor_root'

import torch
from torch.nn import *
class Repro(torch.nn.Module):
    def forward(self, linear):
        relu = torch.relu(linear);  linear = None
        return (relu,)


mod = Repro()

def load_args(reader):
    buf0 = reader.storage('c8b76be50c6daa7279506b1229d3b52f4193e395', 128)
    reader.tensor(buf0, (4, 8), requires_grad=True)  # linear
load_args._version = 0

if __name__ == '__main__':
    from torch._dynamo.repro.after_dynamo import run_repro
    run_repro(mod, load_args, accuracy=False, command='minify',
        save_dir='/tmp/mini/dbg/checkpoints', autocast=False, backend='relu_compile_error_TESTING_ONLY')
"""


def test_the_minifiers_repro_runs_without_this_machines_paths_and_says_reproduced() -> None:
    text = portable_graph(MINIFIED, "dynamo", ["import program_defs  # noqa"], accuracy=False)
    assert text is not None
    assert "/tmp/mini" not in text and "/tmp/torchinductor_root" not in text
    assert "from torch._dynamo.repro.after_dynamo import run_repro" in text
    assert "command='run'" in text and "save_dir=None" in text
    assert "backend='relu_compile_error_TESTING_ONLY'" in text
    assert "import torch\nimport program_defs" in text
    assert "REPRODUCED: compiling the graph raised" in text
    compile(text, "repro.py", "exec")  # valid Python
    assert portable_graph("import torch\n", "dynamo", [], accuracy=False) is None


def test_a_program_is_copied_with_the_modules_beside_it_that_it_imports(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "helpers.py").write_text("from ops import clip\nX = 1\n")  # ops via helpers
    (source / "ops.py").write_text("import helpers\nclip = None\n")  # and a cycle back
    (source / "unused.py").write_text("Y = 2\n")
    program = source / "train.py"
    program.write_text("import torch\nimport helpers\nfrom json import dumps\nprint(helpers.X)\n")
    assert local_imports(program) == ([source / "helpers.py", source / "ops.py"], [])
    out = tmp_path / "repro"
    repro = write_program_repro(out, ["python", str(program), "--steps", "2"], "eager",
                                "It crashes.", "it fails at the dynamo layer")  # fmt: skip
    assert repro["written"] and repro["standalone"] and repro["source"] == "program"
    assert sorted(p.name for p in out.iterdir()) == ["helpers.py", "ops.py", "repro.py", "train.py"]
    runner = (out / "repro.py").read_text()
    assert "BACKEND = 'eager'" in runner and "['--steps', '2']" in runner
    compile(runner, "repro.py", "exec")


def test_a_path_argument_keeps_the_program_repro_from_standing_alone(tmp_path: Path) -> None:
    program = tmp_path / "train.py"
    program.write_text("import sys\n")
    repro = write_program_repro(tmp_path / "repro", ["python", str(program), str(tmp_path)],
                                None, "It crashes.", "why")  # fmt: skip
    assert repro["standalone"] is False
    assert repro["not_standalone_because"] == [f"argument {tmp_path} is a path on this machine"]


def test_a_custom_op_is_imported_from_the_module_that_registers_it(tmp_path: Path) -> None:
    """Two modules of one folder share a namespace; each registers its own op."""
    (tmp_path / "a_ops.py").write_text(
        '@torch.library.custom_op("shared::row_max", mutates_args=())\n'
    )
    (tmp_path / "b_ops.py").write_text(
        '@torch.library.custom_op("shared::scale_", mutates_args=())\n'
    )
    program = tmp_path / "train.py"
    program.write_text("import b_ops\n")
    out = tmp_path / "repro"
    out.mkdir()
    graph = "scale = torch.ops.shared.scale_.default(x)"
    lines, missing = repro_imports(graph, [], program, out)
    assert missing == [] and lines == [
        "import b_ops  # noqa: E402,F401  registers torch.ops.shared.scale_"
    ]
    assert sorted(p.name for p in out.iterdir()) == ["b_ops.py"]


def test_a_backend_the_program_wrote_is_told_from_torchs() -> None:
    """What a torch.compile call records about its backend: the user's function with its
    file and line; nothing for torch's own backends, by name or by function."""
    import torch

    from pt2doctor.torchcompat.dynamo import _users_backend

    def strict_backend(gm, example_inputs):  # type: ignore[no-untyped-def]
        return gm.forward

    mine = _users_backend(strict_backend)
    assert mine is not None and mine["backend"] == "strict_backend"
    assert mine["file"] == __file__ and mine["function"].endswith("strict_backend")
    assert _users_backend("inductor") is None and _users_backend(None) is None
    assert _users_backend(torch._dynamo.backends.debugging.eager) is None
