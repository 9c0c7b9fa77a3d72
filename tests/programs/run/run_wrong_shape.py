"""A compiled layer called with an input of the wrong width: the user's bug, which fails in
eager too. Compiled, the call recompiles (the width changed) and the recompile fails while
Dynamo runs the layer on fake tensors (tests/integration/test_run.py)."""

import torch
from torch import nn

layer = torch.compile(nn.Linear(8, 4))  # MARK:compile
print(layer(torch.randn(2, 8)).shape)
layer(torch.randn(2, 9))  # MARK:wrong
