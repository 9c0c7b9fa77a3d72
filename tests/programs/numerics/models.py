"""Small models whose compiled numbers leave eager's at a known place (tests/integration/
test_compare_modules.py): imported in process, never run as programs.

- ``Net``: four residual blocks; only ``blocks.2.ff.act`` calls ``torch.relu`` (the others
  GELU), which torch's ``relu_accuracy_error_TESTING_ONLY`` backend turns into ``x + 1``.
- ``Gated``: ``gate(x) * value(x)``, ``gate`` a sigmoid, ``value`` a Linear; the backend
  ``sigmoid_times_backend`` perturbs a graph only when it holds a sigmoid *and* a product of
  it (a planted fusion bug): each child alone is right, the parent compiled whole is not.
- ``FusedNet``: a Linear, an ``MLP`` (``fc1`` Linear, ``act`` GELU, ``fc2`` Linear), a
  head; ``linear_gelu_pass`` (an Inductor post-grad pattern pass with a bug) perturbs a GELU
  only when the addmm feeding it is in the same graph: only ``mlp.fc1`` and ``mlp.act``
  compiled together go wrong.
- ``QuickGELU`` (``x * sigmoid(1.702 x)``) swapped into one GPT-2 decoder layer's MLP, and
  ``bump_sigmoid_pass`` (a post-grad pass with a bug: sigmoid + 0.25): only that layer's
  ``mlp.act`` has a sigmoid.
- ``OpNet``: its ``act`` calls the custom op ``numerics_models::fast_gelu`` when compiling
  (``torch.compiler.is_compiling()``) and torch's tanh GELU in eager; the op's kernel uses a
  wrong constant: the traced code differs from eager's, not Inductor's kernels.
- ``GLUNet``: a Linear, a ``GLU`` (``gate(proj(x)) * value(x)``, ``gate`` an ``nn.Sigmoid``),
  a head; ``single_user_sigmoid_pass`` (a post-grad pass with a bug that, as Inductor's own
  pattern passes do, rewrites a node only where its output has one user) shifts the sigmoid:
  a recording hook on ``glu.gate`` gives the sigmoid a second user, so the whole model
  compiled with the hooks on is right.
- ``shift_relu_pass``: a user's Inductor post-grad pass with a bug (every relu becomes relu +
  0.5): under Inductor it miscomputes the one op only ``Net``'s ``blocks.2.ff.act`` has.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class Act(nn.Module):
    def __init__(self, relu: bool) -> None:
        super().__init__()
        self.relu = relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) if self.relu else F.gelu(x)


class FF(nn.Module):
    def __init__(self, relu: bool) -> None:
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.act = Act(relu)
        self.down = nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.act(self.up(x)))


class Block(nn.Module):
    def __init__(self, relu: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.ff = FF(relu)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.ff(self.norm(x))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(relu=i == 2) for i in range(4))
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class Gate(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


class Gated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = Gate()
        self.value = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gate(x) * self.value(x)  # MARK:fused


class GatedNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 16)
        self.mix = Gated()
        self.out = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.mix(self.inp(x)))


def sigmoid_times_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    """A planted fusion bug: a product of a sigmoid is computed as (sigmoid + 0.1) * y, only
    in a graph that holds both."""
    targets = {node.target for node in gm.graph.nodes}
    if torch.sigmoid in targets and operator.mul in targets:
        for node in gm.graph.nodes:
            if node.target is torch.sigmoid:
                with gm.graph.inserting_after(node):
                    shifted = gm.graph.call_function(operator.add, (node, 0.1))
                node.replace_all_uses_with(
                    shifted, delete_user_cb=lambda user, new=shifted: user is not new
                )
        gm.recompile()
    return gm.forward


def _add_after(graph: torch.fx.Graph, target: Any, amount: float) -> None:
    """Each ``target`` node's users get ``node + amount`` instead (a planted pass bug)."""
    for node in list(graph.nodes):
        if node.target is target:
            with graph.inserting_after(node):
                shifted = graph.call_function(torch.ops.aten.add.Tensor, (node, amount))
            node.replace_all_uses_with(
                shifted, delete_user_cb=lambda user, new=shifted: user is not new
            )


def shift_relu_pass(graph: torch.fx.Graph) -> None:
    """A planted pass bug: each ``aten.relu`` node's users get ``relu + 0.5`` instead."""
    _add_after(graph, torch.ops.aten.relu.default, SHIFT)


SHIFT = 0.5


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class FusedNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 16)
        self.mlp = MLP()
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.mlp(torch.tanh(self.inp(x))))


def linear_gelu_pass(graph: torch.fx.Graph) -> None:
    """A planted pattern-pass bug: GELU's ``erf(addmm * c)`` (the decomposed GELU of a
    Linear's output, both in this graph) gets +0.1 on the erf."""
    mm = torch.ops.aten.addmm.default
    for node in list(graph.nodes):
        if node.target is not torch.ops.aten.erf.default:
            continue
        scaled = node.args[0]
        if not (isinstance(scaled, torch.fx.Node) and scaled.args
                and getattr(scaled.args[0], "target", None) is mm):  # fmt: skip
            continue
        with graph.inserting_after(node):
            shifted = graph.call_function(torch.ops.aten.add.Tensor, (node, 0.1))
        node.replace_all_uses_with(
            shifted, delete_user_cb=lambda user, new=shifted: user is not new
        )


class QuickGELU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(1.702 * x)


def bump_sigmoid_pass(graph: torch.fx.Graph) -> None:
    """A planted pass bug: each ``aten.sigmoid`` node's users get ``sigmoid + 0.25``."""
    _add_after(graph, torch.ops.aten.sigmoid.default, 0.25)


class Squash(nn.Module):
    """A Linear then tanh: the one module whose backward has a tanh_backward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


class TrainNet(nn.Module):
    """inp -> act (GELU) -> squash (Linear + tanh) -> head: only squash has a tanh."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 16)
        self.squash = Squash()
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.squash(F.gelu(self.inp(x))))


def _forward_as_is(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    from functorch.compile import make_boxed_func

    return make_boxed_func(gm.forward)


def _scaled_tanh_backward(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    """A planted backward bug: every ``tanh_backward`` result is scaled by 1.5."""
    from functorch.compile import make_boxed_func

    graph = gm.graph
    for node in list(graph.nodes):
        if node.target is torch.ops.aten.tanh_backward.default:
            with graph.inserting_after(node):
                scaled = graph.call_function(torch.ops.aten.mul.Tensor, (node, 1.5))
            node.replace_all_uses_with(
                scaled, delete_user_cb=lambda user, new=scaled: user is not new
            )
    gm.recompile()
    return make_boxed_func(gm.forward)


def tanh_backward_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    """AOTAutograd with a correct forward and a backward whose tanh_backward is off."""
    from torch._dynamo.backends.common import aot_autograd

    backend = aot_autograd(fw_compiler=_forward_as_is, bw_compiler=_scaled_tanh_backward)
    return backend(gm, example_inputs)


@torch.library.custom_op("numerics_models::fast_gelu", mutates_args=())
def fast_gelu(x: torch.Tensor) -> torch.Tensor:
    """A "fused" tanh GELU whose kernel has a wrong constant (0.8 for sqrt(2/pi) and the cube)."""
    return 0.5 * x * (1 + torch.tanh(0.8 * x))


@fast_gelu.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class FastAct(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            return torch.ops.numerics_models.fast_gelu(x)
        return F.gelu(x, approximate="tanh")


class OpNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 16)
        self.act = FastAct()
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.act(self.inp(x)))


class GLU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.gate = nn.Sigmoid()
        self.value = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gate(self.proj(x)) * self.value(x)


class GLUNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 16)
        self.glu = GLU()
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.glu(self.inp(x)))


def single_user_sigmoid_pass(graph: torch.fx.Graph) -> None:
    """A planted pass bug: a sigmoid whose output has one user (the output itself, or the op
    it feeds) gets +0.25 there; one with more users is left alone."""
    for node in list(graph.nodes):
        if node.target is torch.ops.aten.sigmoid.default and len(node.users) == 1:
            with graph.inserting_after(node):
                shifted = graph.call_function(torch.ops.aten.add.Tensor, (node, 0.25))
            node.replace_all_uses_with(
                shifted, delete_user_cb=lambda user, new=shifted: user is not new
            )
