import statistics
import time

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)

N_FEATURES, HIDDEN, N_OUT = 32, 128, 4
N_BATCHES, BATCH = 30, 1024


class RobustRegressor(nn.Module):
    """MLP that rescales hidden activations by their batch spread and clips outliers."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(N_FEATURES, HIDDEN)
        self.hidden = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, N_OUT)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        h_np = h.detach().numpy()
        spread = float(h_np.std()) + 1e-5
        h = torch.from_numpy(np.clip(h_np / spread, 0.0, 4.0))
        h = torch.relu(self.hidden(h))
        return self.out(h)


model = RobustRegressor().eval()
compiled = torch.compile(model)

g = torch.Generator().manual_seed(1)
xs = [torch.randn(BATCH, N_FEATURES, generator=g) * (1 + 4 * (torch.rand(BATCH, 1, generator=g) > 0.98))
      for _ in range(N_BATCHES)]
ys = [torch.randn(BATCH, N_OUT, generator=g) for _ in range(N_BATCHES)]

times = []
total = 0.0
with torch.no_grad():
    for x, y in zip(xs, ys):
        t0 = time.perf_counter()
        pred = compiled(x)
        times.append((time.perf_counter() - t0) * 1000)
        total += float(torch.nn.functional.mse_loss(pred, y))

print(f"result: {total / N_BATCHES:.4g}")
print(f"ms_per_step: {statistics.median(times[N_BATCHES // 2:]):.2f}")
