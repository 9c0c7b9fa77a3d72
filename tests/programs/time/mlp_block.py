"""``pt2doctor run --profile -- python mlp_block.py``: a LayerNorm + MLP + ``cumsum`` block
served one request at a time, the way a small inference service calls its model
(tests/integration/test_profile.py).

- ``cumsum`` has no Inductor lowering on CPU: a fallback op inside the compiled region.
- ``--grad``: the loop runs without ``torch.no_grad()``, so every call goes through the
  autograd function and saves buffers for a backward that never runs.
- ``--item-break``: a ``.item()`` between the two halves: two regions and eager code between.
- ``--item-where``: the same branch as ``torch.where`` (the break's fix): one region.
- ``--inference-mode``: the loop under ``torch.inference_mode()`` (autograd_in_inference's
  other fix).
- ``--eager-mlp``: the MLP is behind ``torch.compiler.disable``: it runs eagerly.
- ``--skipped-mlp``: the MLP runs its two layers in a loop with a graph break in it (a debug
  hook, as a user leaves one): Dynamo breaks the forward at the call and skips ``mlp``'s own
  frame (it cannot resume inside a loop), so the MLP runs eagerly.
- ``--matmul-cumsum``: the cumsum written as a matmul with a triangle of ones (fallback_op's
  fix: an op Inductor lowers).
- ``--width N``: the block's width (64: a small request, overhead-bound).
- ``--batch N``: the same requests served N to a call (overhead_bound's fix).
- ``--reshape-at N``: call N serves two requests at once (a batch of 2): a recompile, inside
  the profile window when N falls there.
- ``--user-profiler PATH``: the program profiles itself, as a user does: ``torch.profiler``
  with a ``schedule`` (2 calls skipped, 2 warm, 20 recorded), ``prof.step()`` after each call
  (a ``ProfilerStep#N`` each), the trace exported to PATH.
"""

import contextlib
import os
import subprocess
import sys

import torch
import torch._dynamo
from torch import nn

WIDTH = int(sys.argv[sys.argv.index("--width") + 1]) if "--width" in sys.argv else 64
CALLS = int(sys.argv[sys.argv.index("--calls") + 1]) if "--calls" in sys.argv else 40
SKIPPED = "--skipped-mlp" in sys.argv
MATMUL_CUMSUM = "--matmul-cumsum" in sys.argv
PREEMPT = (
    {int(i) for i in sys.argv[sys.argv.index("--preempt") + 1].split(",")}
    if "--preempt" in sys.argv
    else set()
)


def preempted() -> None:
    """Stopped by another process for 0.1 s, as a busy machine's scheduler would."""
    pid = os.getpid()
    stop = f"kill -STOP {pid}; sleep 0.1; kill -CONT {pid}"
    subprocess.Popen(["sh", "-c", stop]).wait()


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.up = nn.Linear(WIDTH, 4 * WIDTH)
        self.down = nn.Linear(4 * WIDTH, WIDTH)

    def mlp(self, h: torch.Tensor) -> torch.Tensor:  # MARK:def mlp
        if SKIPPED:
            for layer in (self.up, self.down):
                h = layer(h)  # MARK:layer
                torch._dynamo.graph_break()  # MARK:skip
            return h
        h = nn.functional.gelu(self.up(h))  # MARK:gelu
        return self.down(h)  # MARK:down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)  # MARK:norm
        if "--item-break" in sys.argv and h.abs().max().item() > 100:  # MARK:item
            h = h / 100
        if "--item-where" in sys.argv:  # the break's fix: the branch as torch.where
            h = torch.where(h.abs().max() > 100, h / 100, h)
        h = self.mlp(h)  # MARK:mlp
        if MATMUL_CUMSUM:  # the same sums as a matmul, which Inductor lowers
            return h @ torch.triu(torch.ones(WIDTH, WIDTH))
        return h.cumsum(dim=-1)  # MARK:cumsum


if "--eager-mlp" in sys.argv:
    Block.mlp = torch.compiler.disable(Block.mlp)  # type: ignore[method-assign]

torch.manual_seed(0)
torch.set_num_threads(1)  # one request, one core: steady times beside the suite's other worker
model = torch.compile(Block())
BATCH = int(sys.argv[sys.argv.index("--batch") + 1]) if "--batch" in sys.argv else 1
RESHAPE_AT = int(sys.argv[sys.argv.index("--reshape-at") + 1]) if "--reshape-at" in sys.argv else -1
requests = [torch.randn(1, WIDTH) for _ in range(CALLS * BATCH)]
profiler: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
if "--user-profiler" in sys.argv:
    from torch.profiler import ProfilerActivity, profile, schedule

    out = sys.argv[sys.argv.index("--user-profiler") + 1]
    profiler = profile(activities=[ProfilerActivity.CPU],
                       schedule=schedule(wait=2, warmup=2, active=20, repeat=1),
                       on_trace_ready=lambda prof: prof.export_chrome_trace(out))  # fmt: skip
outputs: list[torch.Tensor] = []
mode: contextlib.AbstractContextManager[object] = (
    torch.inference_mode() if "--inference-mode" in sys.argv  # autograd_in_inference's fix
    else contextlib.nullcontext() if "--grad" in sys.argv
    else torch.no_grad()
)  # fmt: skip
with mode, profiler as prof:
    for first in range(0, len(requests), BATCH):
        if first // BATCH in PREEMPT:
            preempted()
        extra = 1 if first // BATCH == RESHAPE_AT else 0  # a second request: a new shape
        served = model(torch.cat(requests[first : first + BATCH + extra]))
        outputs.append(served)  # no op of its own in the loop: summed after it
        if prof is not None:
            prof.step()  # type: ignore[attr-defined]
print("served", len(requests))
total = float(torch.cat(outputs).double().abs().sum())  # no cancellation in the sum
print(f"checksum {total:.6f}")  # the same with each fix applied, to float32's rounding
