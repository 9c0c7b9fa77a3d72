"""Plants a size specialized by Python code: a dict keyed by the input's length.

``SCALES[x.shape[0]]`` makes Dynamo specialize the length (a dict key must be a concrete int),
so every new length is a new variant and the size never becomes dynamic: unbounded.
Expected: one size change per recompile, unbounded outlook, warning severity, and a fix that
points at the dict lookup (MARK:lookup), the line that installed the specialization.
"""

import torch

SCALES = {n: float(n) for n in range(1, 64)}


def step(x):
    scale = SCALES[x.shape[0]]  # MARK:lookup
    return x * scale


LENGTHS = (4, 5, 6, 7)


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    for n in LENGTHS:
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x), step(x))


if __name__ == "__main__":
    main()
