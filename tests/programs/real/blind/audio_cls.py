import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")

SR, N_FFT, HOP, N_CLASSES = 16000, 512, 128, 10


class SpecClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        self.proj = nn.Linear(N_FFT // 2 + 1, 64)          # learned "mel" projection
        self.conv = nn.Conv1d(64, 64, kernel_size=5, padding=2)
        self.head = nn.Linear(64, N_CLASSES)

    def forward(self, wav):                                  # wav: (B, samples)
        spec = torch.stft(wav, n_fft=N_FFT, hop_length=HOP, window=self.window,
                          return_complex=True)               # (B, freq, frames) complex64
        mag = spec.abs()
        x = torch.log1p(mag).transpose(1, 2)                 # (B, frames, freq)
        x = F.gelu(self.proj(x)).transpose(1, 2)             # (B, 64, frames)
        x = F.gelu(self.conv(x))
        return self.head(x.mean(dim=2))


torch.manual_seed(0)
model = SpecClassifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
cmodel = torch.compile(model, backend=backend)

g = torch.Generator().manual_seed(1)
data = [(torch.randn(16, SR, generator=g), torch.randint(0, N_CLASSES, (16,), generator=g))
        for _ in range(4)]

times = []
for step in range(16):
    wav, y = data[step % len(data)]
    t0 = time.perf_counter()
    loss = F.cross_entropy(cmodel(wav), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
    print(f"step {step:2d} loss {loss.item():.4f}")

steady = sorted(times[4:])
print(f"median ms/step (steps 4+): {steady[len(steady) // 2] * 1e3:.2f}")
from torch._dynamo.utils import counters
print("unique_graphs", counters["stats"]["unique_graphs"])
