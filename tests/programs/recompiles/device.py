"""Plants a device recompile: the same-sized tensor arrives on the CPU, then on the meta device
(what a tensor made on the default device beside a model on another looks like; meta stands in
for a GPU on a machine without one), alternating, for several steps.

Expected: one recompile whose only change is ``x``'s device (cpu → meta), not its dispatch keys
(which is what Dynamo's guard compares); a bounded outlook, info severity, and the device fix:
make it on one device where it is made. ``--one-device`` applies that fix: no recompile.
"""

import sys

import torch

STEPS = 4


@torch.compile(backend="eager")
def scale(x):
    return x * 2 + 1


def main():
    one_device = "--one-device" in sys.argv
    for step in range(STEPS):
        device = "cpu" if step % 2 == 0 or one_device else "meta"
        x = torch.randn(8, device=device)  # MARK: made
        scale(x)
    print("steps:", STEPS)


if __name__ == "__main__":
    main()
