"""Plants a skipped frame: ``torch._dynamo.graph_break()`` inside a Python for-loop.

Dynamo cannot resume inside a loop, so (in torch 2.13) it gives up on the whole frame: the
function runs eagerly and no graph is produced.
Expected: a ``skipped`` frame, a ``skipped_frame`` failure, a ``frame_skipped`` finding and an
``explicit_disable`` break at MARK:loop.
"""

import torch
import torch._dynamo


def step(x):
    for _ in range(3):
        x = x + 1
        torch._dynamo.graph_break()  # MARK:loop
    return x


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    x = torch.randn(4)
    torch.testing.assert_close(compiled(x), step(x))


if __name__ == "__main__":
    main()
