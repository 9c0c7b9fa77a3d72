"""``pt2doctor ablate -- python data_dependent.py``: a branch on a tensor's value inside a
``fullgraph=True`` region with ``capture_scalar_outputs``: Dynamo cannot guard on the
data-dependent ``n > 0`` (``GuardOnDataDependentSymNode``, raised as a ``UserError``)."""

import torch

torch._dynamo.config.capture_scalar_outputs = True


def route(x: torch.Tensor) -> torch.Tensor:
    n = x.sum().int().item()
    if n > 0:  # MARK:branch
        return x * 2
    return x - 1


print(torch.compile(route, fullgraph=True)(torch.ones(4)))
