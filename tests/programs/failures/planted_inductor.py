"""``pt2doctor ablate -- python planted_inductor.py``: torch's planted compiler bug in Inductor:
``cpp.inject_relu_bug_TESTING_ONLY = "compile_error"`` makes the C++ code generated for a ReLU
fail to compile. Every rung below Inductor runs."""

import torch
from torch import nn

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"

model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
with torch.no_grad():
    print(torch.compile(model)(torch.randn(4, 8)).shape)
