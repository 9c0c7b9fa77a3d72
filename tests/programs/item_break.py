"""Plants one graph break: ``.item()`` on a tensor drives a Python ``if``.

Dynamo cannot trace a data-dependent scalar into the graph (``capture_scalar_outputs`` is off),
so it breaks at the marked line and compiles the rest as a resume function.
Expected: one ``data_dependent_scalar`` break at MARK:item, compiles ``first_compile`` and
``resume_after_graph_break``.
"""

import torch


def step(x):
    y = x * 2
    if y.sum().item() > 0:  # MARK:item
        return y + 1
    return y - 1


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    x = torch.ones(4)
    torch.testing.assert_close(compiled(x), step(x))


if __name__ == "__main__":
    main()
