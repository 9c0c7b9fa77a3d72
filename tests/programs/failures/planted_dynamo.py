"""``pt2doctor ablate -- python planted_dynamo.py``: torch's planted gap in Dynamo:
``inject_BUILD_SET_unimplemented_TESTING_ONLY`` makes a set literal untraceable, and
``fullgraph=True`` turns the graph break into an error at the first rung."""

import torch

torch._dynamo.config.inject_BUILD_SET_unimplemented_TESTING_ONLY = True


def reduce_rows(x: torch.Tensor) -> torch.Tensor:
    dims = {0, 1}  # MARK:set
    return x.sum(dim=tuple(dims))


print(torch.compile(reduce_rows, fullgraph=True)(torch.randn(3, 4)))
