"""The trace's what-was-built parsers on small hand-written payloads in torch 2.13's format:
ops per user line with the loop repetitions (one-line bodies repeat a pattern, several-line
bodies alternate groups), launches of the output code with their comments."""

from __future__ import annotations

import pytest

from pt2doctor.cli import main
from pt2doctor.trace.built import parse_output_code, parse_output_graph

GRAPH = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[8, 64][64, 1]cpu", L_g_: "f32[3][1]cpu", L_n_: "f32[s0][1]cpu"):
        l_x_ = L_x_

        # File: /u/m.py:5 in forward, code: h = x.relu()
        h: "f32[8, 64][64, 1]cpu" = l_x_.relu();  l_x_ = None

        # File: /u/m.py:7 in forward, code: h = h + g[i] * torch.sin(h)
        getitem: "f32[][]cpu" = l_g_[0]
        sin: "f32[8, 64][64, 1]cpu" = torch.sin(h)
        mul: "f32[8, 64][64, 1]cpu" = getitem * sin
        h_1: "f32[8, 64][64, 1]cpu" = h + mul
        getitem_1: "f32[][]cpu" = l_g_[1]
        sin_1: "f32[8, 64][64, 1]cpu" = torch.sin(h_1)
        mul_1: "f32[8, 64][64, 1]cpu" = getitem_1 * sin_1
        h_2: "f32[8, 64][64, 1]cpu" = h_1 + mul_1

        # File: /u/m.py:9 in forward, code: y = torch.cos(h)
        y: "f32[8, 64][64, 1]cpu" = torch.cos(h_2)

        # File: /u/m.py:10 in forward, code: h = h * y
        h_3: "f32[8, 64][64, 1]cpu" = h_2 * y

        # File: /u/m.py:9 in forward, code: y = torch.cos(h)
        y_1: "f32[8, 64][64, 1]cpu" = torch.cos(h_3)

        # File: /u/m.py:10 in forward, code: h = h * y
        h_4: "f32[8, 64][64, 1]cpu" = h_3 * y_1
        return (h_4,)
"""


def test_ops_by_line_with_repetitions_and_inputs() -> None:
    graph = parse_output_graph(GRAPH)
    rows = [(g.line, g.ops, g.groups, g.period) for g in graph.lines]
    assert rows == [(5, 1, 1, 1), (7, 8, 1, 2), (9, 2, 2, 2), (10, 2, 2, 2)]
    assert graph.inputs == [512, 3, None]  # a symbolic size has no numel
    assert graph.lines[graph.node_lines["h_2"]].line == 7
    assert graph.lines[graph.node_lines["y_1"]].line == 9


CODE = """# AOT ID: ['0_forward']
# Topologically Sorted Source Nodes: [x_1], Original ATen: [aten.relu]
triton_poi_fused_relu_0 = async_compile.triton('triton_poi_fused_relu_0', '''
''', device_str='cuda')
class Runner:
    def call(self, args):
        # Topologically Sorted Source Nodes: [x], Original ATen: [aten.addmm]
        extern_kernels.mm(arg0_1, arg1_1, out=buf0)
        triton_poi_fused_relu_0.run(buf1, 64, stream=stream0)
        # Topologically Sorted Source Nodes: [c], Original ATen: [aten.cumsum]
        # [Provenance debug handles] torch.ops.aten.cumsum.default:3
        buf2 = torch.ops.aten.cumsum.default(buf1, dim=-1, dtype=None)
        u0 = buf2.item()
        return (buf2, )
"""


def test_launches_carry_their_kind_comments_and_handles() -> None:
    code = parse_output_code(CODE)
    assert code.graph == "forward"
    rows = [
        (launch.name, launch.kind, launch.source_nodes, launch.handle) for launch in code.launches
    ]
    assert rows == [
        ("extern_kernels.mm", "library", ("x",), None),
        ("triton_poi_fused_relu_0", "generated", ("x_1",), None),  # its definition's comment
        ("torch.ops.aten.cumsum.default", "fallback", ("c",), "torch.ops.aten.cumsum.default:3"),
        ("buf2.item()", "sync", (), None),
    ]


def test_run_says_no_such_option_when_a_mistyped_option_comes_before_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--profil", "--", "python", "x.py"]) == 2
    assert "no such option: --profil" in capsys.readouterr().err


LAYERS = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 4][4, 1]cpu", L_self_modules_layers_modules_0_parameters_weight_: "f32[4, 4][4, 1]cpu", L_self_modules_layers_modules_1_parameters_weight_: "f32[4, 4][4, 1]cpu", L_self_parameters_scale_: "f32[4][1]cpu"):
        # File: /m/model.py:8 in forward, code: x = F.linear(x, self.weight)
        x: "f32[2, 4][4, 1]cpu" = torch._C._nn.linear(l_x_, l_self_modules_layers_modules_0_parameters_weight_, None);  l_self_modules_layers_modules_0_parameters_weight_ = None
        # File: /m/model.py:9 in forward, code: x = x * self.scale
        x_1: "f32[2, 4][4, 1]cpu" = x * l_self_parameters_scale_
        # File: /m/model.py:8 in forward, code: x = F.linear(x, self.weight)
        x_2: "f32[2, 4][4, 1]cpu" = torch._C._nn.linear(x_1, l_self_modules_layers_modules_1_parameters_weight_, None)
        # File: /m/model.py:9 in forward, code: x = x * self.scale
        x_3: "f32[2, 4][4, 1]cpu" = x_2 * l_self_parameters_scale_
        return (x_3,)
"""


def test_each_line_names_the_modules_whose_weights_its_ops_read() -> None:
    """A layer's line run by two layers reads two modules' weights; a line that reads one
    module's parameter on every pass, one (a loop over one module). What is set to None after
    the ``;`` is not read."""
    lines = {g.line: g for g in parse_output_graph(LAYERS).lines}
    assert lines[8].owners == {"l_self_modules_layers_modules_0", "l_self_modules_layers_modules_1"}
    assert lines[9].owners == {"l_self"}
