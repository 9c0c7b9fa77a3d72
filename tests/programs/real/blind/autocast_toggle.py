import statistics
import time

import torch
import torch.nn as nn

torch.manual_seed(0)

N_FEATURES, HIDDEN, N_CLASSES = 128, 256, 16
N_BATCHES, BATCH = 24, 64


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(N_FEATURES, HIDDEN),
            nn.LayerNorm(HIDDEN),
            nn.ReLU(),
            nn.Linear(HIDDEN, HIDDEN),
            nn.ReLU(),
            nn.Linear(HIDDEN, N_CLASSES),
        )

    def forward(self, x):
        return self.net(x).log_softmax(-1)


model = Classifier().eval()
compiled = torch.compile(model)

g = torch.Generator().manual_seed(1)
batches = [torch.randn(BATCH, N_FEATURES, generator=g) for _ in range(N_BATCHES)]
labels = [torch.randint(0, N_CLASSES, (BATCH,), generator=g) for _ in range(N_BATCHES)]

# half of the traffic comes from the low-latency tier, which is served in bf16
low_latency = [i % 2 == 1 for i in range(N_BATCHES)]

nll_total = 0.0
times = []
with torch.inference_mode():
    for i, (x, y) in enumerate(zip(batches, labels)):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=low_latency[i]):
            logp = compiled(x)
        times.append((time.perf_counter() - t0) * 1000)
        nll_total += float(-logp.float().gather(1, y[:, None]).mean())

print(f"mean nll: {nll_total / N_BATCHES:.4f}")
print(f"result: {nll_total / N_BATCHES:.4g}")
print(f"ms_per_step: {statistics.median(times[N_BATCHES // 2:]):.2f}")
