"""``pt2doctor ablate --accuracy-check "python check_saved.py OUT" -- python hook_freeze.py
OUT``: a classifier whose encoder is frozen after its first training step by a forward hook
that detaches the encoder's output (no gradient reaches it from then on). The model counts
its steps in a method kept out of the graph with ``torch.compiler.disable`` (a counter in the
graph would recompile every step), and that method registers the hook (MARK:hook_added).

The hook is registered after the forward was compiled. Dynamo does not guard on module hooks
(``torch._dynamo.config.skip_nnmodule_hook_guards``, True by default), so the compiled forward
keeps running as traced, without the hook: the compiled model keeps training its encoder,
eager does not, and the parameters differ after the second step. By design, not a compiler
bug. Both fixes give eager's numbers (the test measures them): ``FIX=flag`` sets
``skip_nnmodule_hook_guards = False`` before compiling; ``FIX=before`` registers the hook when
the model is built and lets it read a flag instead. ``BACKEND`` (default inductor) is the
backend it compiles with (ablate forces its own per rung).

The case-mode twin is hook_freeze_case.py (the same model, as a training cell). The program
saves eager's and the compiled parameters for the check (tests/programs/failures/
check_saved.py).
"""

import copy
import json
import os
import sys
from pathlib import Path

import torch
from torch import nn

FIX = os.environ.get("FIX", "")


def detach_output(module, inputs, output):
    """A frozen module: its output is a constant to everything after it."""
    return output.detach()


class Classifier(nn.Module):
    def __init__(self, freeze_after=1):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
        self.head = nn.Linear(32, 4)
        self.freeze_after, self.steps, self.frozen = freeze_after, 0, None
        self.freezing = False
        if FIX == "before":  # the fix: the hook exists before compiling, a flag switches it
            self.encoder.register_forward_hook(self.freeze_when_asked)

    def freeze_when_asked(self, module, inputs, output):
        return output.detach() if self.freezing else output

    def forward(self, x):
        out = self.head(self.encoder(x))
        if self.training:
            self.count_step()
        return out

    @torch.compiler.disable
    def count_step(self):
        self.steps += 1
        if self.steps < self.freeze_after or self.frozen is not None:
            return
        if FIX == "before":
            self.freezing = True
            return
        self.frozen = self.encoder.register_forward_hook(detach_output)  # MARK:hook_added


def data():
    torch.manual_seed(0)
    return torch.randn(64, 16), torch.randint(0, 4, (64,))


def train(model, steps=3):
    """SGD steps on a fixed batch; the parameters after the last one."""
    x, y = data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def main():
    if FIX == "flag":  # the fix: guard on hooks, so a changed hook recompiles
        torch._dynamo.config.skip_nnmodule_hook_guards = False
    torch.manual_seed(0)
    model = Classifier().train()
    compiled = torch.compile(copy.deepcopy(model), backend=os.environ.get("BACKEND", "inductor"))
    expected = train(model)
    got = train(compiled)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    saved = {"expected": expected.tolist(), "got": got.tolist()}
    (out / "outputs.json").write_text(json.dumps(saved))


if __name__ == "__main__":
    main()
