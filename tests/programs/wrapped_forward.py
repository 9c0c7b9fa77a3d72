"""A module whose ``forward`` goes through a generic ``functools.wraps`` decorator (the shape of
transformers' ``can_return_tuple``), compiled as a bound method:
``model.forward = torch.compile(model.forward)``.

Dynamo names the frame after the wrapper's code (``wrapper``). Expected: ``frames[].display_name``
``Net.forward (through wrapper at wrapped_forward.py:LINE)`` with LINE at MARK:wrapper (the
decorator line, where the wrapper's code starts), and ``Plain.forward`` for an undecorated
module compiled the same way. ``Whole`` is compiled whole, ``torch.compile(model)``, as
``pt2doctor check`` compiles a case: torch's own ``compile_wrapper`` then stands between
``nn.Module.__call__`` and the wrapper; expected ``Whole.forward (through wrapper at
wrapped_forward.py:LINE)`` with LINE at MARK:whole.
"""

import functools

import torch


def returns_dict(func):
    @functools.wraps(func)  # MARK:wrapper
    def wrapper(self, *args, **kwargs):
        return {"out": func(self, *args, **kwargs)}

    return wrapper


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    @returns_dict
    def forward(self, x):
        return self.linear(x).relu()


def returns_tuple(func):
    @functools.wraps(func)  # MARK:whole
    def wrapper(self, *args, **kwargs):
        return (func(self, *args, **kwargs),)

    return wrapper


class Whole(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    @returns_tuple
    def forward(self, x):
        return self.linear(x).tanh()


class Plain(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):  # MARK:plain
        return self.linear(x).sin()


def main():
    torch.manual_seed(0)
    for model in (Net(), Plain()):
        model.forward = torch.compile(model.forward, backend="eager")
        model(torch.randn(2, 4))
    torch.compile(Whole(), backend="eager")(torch.randn(2, 4))


if __name__ == "__main__":
    main()
