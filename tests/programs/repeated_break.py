"""Plants one graph-break site that occurs in several compiles.

``step`` has a ``print`` break (MARK:print) and is called from three call sites with different
dtypes, so it compiles three times (first compile, two recompiles) and breaks at the same line
each time. Expected: ONE graph_breaks row for MARK:print listing several compile ids.
"""

import torch


def step(x):
    y = x * 2
    print("pt2doctor repeated_break")  # MARK:print
    return y + 1


def from_loader(compiled):
    return compiled(torch.randn(4, dtype=torch.float32))


def from_eval(compiled):
    return compiled(torch.randn(4, dtype=torch.float64))


def from_export(compiled):
    return compiled(torch.randn(4, dtype=torch.float16))


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    from_loader(compiled)
    from_eval(compiled)
    from_export(compiled)


if __name__ == "__main__":
    main()
