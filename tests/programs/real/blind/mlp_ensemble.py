"""Ensemble of small MLPs evaluated in one shot with torch.func.

The members are independent nn.Modules (as they come out of training). The
recipe from the torch.func "model ensembling" tutorial is wrapped in one
function -- stack the weights, make a stateless template, vmap the
functional call -- and that function is compiled.
"""
import copy
import os
import statistics
import time

import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state, vmap


class MLP(nn.Module):
    def __init__(self, d_in=32, hidden=64, d_out=4):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, hidden), nn.GELU(),
            nn.Linear(hidden, hidden), nn.GELU(),
            nn.Linear(hidden, d_out),
        )

    def forward(self, x):
        return self.net(x)


backend = os.environ.get("BACKEND", "inductor")


@torch.compile(backend=backend)
def ensemble_predict(models, x):
    """Run every member on x at once; return mean probs and member disagreement."""
    params, buffers = stack_module_state(models)
    base_model = copy.deepcopy(models[0]).to("meta")  # stateless template

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))

    out = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)  # [M, B, d_out]
    probs = out.softmax(-1)
    return probs.mean(0), probs.std(0).amax(-1)


def main():
    torch.manual_seed(0)
    models = [MLP().eval() for _ in range(8)]
    g = torch.Generator().manual_seed(1)
    batches = [torch.randn(256, 32, generator=g) for _ in range(5)]

    with torch.no_grad():
        for i, x in enumerate(batches):
            mean, unc = ensemble_predict(models, x)
            print(f"batch {i}: mean-prob sum {mean.sum().item():.4f}  "
                  f"class0 {mean[:, 0].mean().item():.6f}  max-std {unc.max().item():.6f}")

        times = []
        for _ in range(4):
            for x in batches:
                t0 = time.perf_counter()
                ensemble_predict(models, x)
                times.append((time.perf_counter() - t0) * 1e3)
        print(f"steady compiled: {statistics.median(times):.3f} ms/batch (median over {len(times)})")

    print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])


if __name__ == "__main__":
    main()
