# Batched inference with a small conv net. The data pipeline has a bug: some
# batches come out as float16 or float64 instead of float32. The model casts its
# input to float32 defensively, so eager mode "just works".
import random
import time

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)
random.seed(0)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = x.to(torch.float32)
        return self.fc(self.features(x).flatten(1))


def load_batch(i):
    arr = np.random.rand(4, 3, 16, 16)  # numpy gives float64
    if i % 3 == 0:
        arr = arr.astype(np.float32)
    elif i % 3 == 1:
        arr = arr.astype(np.float16)  # "saves memory" branch of the loader
    return torch.from_numpy(arr)       # i % 3 == 2 stays float64


model = SmallCNN().eval()
cmodel = torch.compile(model)

total = 0.0
t0 = time.time()
with torch.no_grad():
    for i in range(24):
        x = load_batch(i)
        out = cmodel(x)
        total += out.softmax(-1).max(-1).values.sum().item() + out.abs().sum().item()
        if i % 6 == 0:
            print(f"batch {i}: dtype={x.dtype} out0={out[0, 0].item():.4f}")
print(f"{(time.time() - t0) * 1000 / 24:.1f} ms/batch")
print(f"result: {total:.4g}")
