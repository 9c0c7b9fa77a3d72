# Small Transformer forecaster trained with a lookback-window curriculum:
# the model sees a longer context every epoch (16 -> 88 steps of history).
import math, os, statistics, time
import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

MAX_CTX, HORIZON, CHANNELS = 96, 12, 3
EPOCHS, BATCHES_PER_EPOCH, BATCH = 10, 8, 32


def make_series(n_series=64, length=2000):
    t = torch.arange(length, dtype=torch.float32)
    periods = torch.tensor([24.0, 168.0, 12.0])
    phase = torch.rand(n_series, CHANNELS, 1) * 2 * math.pi
    amp = 0.5 + torch.rand(n_series, CHANNELS, 1)
    s = amp * torch.sin(2 * math.pi * t / periods[:, None] + phase)
    s = s + 0.1 * torch.randn_like(s)
    return s.transpose(1, 2)  # (n_series, length, channels)


SERIES = make_series()


def sample_batch(gen):
    idx = torch.randint(0, SERIES.shape[0], (BATCH,), generator=gen)
    start = torch.randint(0, SERIES.shape[1] - MAX_CTX - HORIZON, (BATCH,), generator=gen)
    win = torch.stack([SERIES[i, s:s + MAX_CTX + HORIZON] for i, s in zip(idx.tolist(), start.tolist())])
    return win[:, :MAX_CTX], win[:, MAX_CTX:]


class Forecaster(nn.Module):
    def __init__(self, d_model=64, context_len=16):
        super().__init__()
        self.context_len = context_len
        self.inp = nn.Linear(CHANNELS, d_model)
        self.pos = nn.Parameter(torch.randn(MAX_CTX, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=128,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.out = nn.Linear(d_model, HORIZON * CHANNELS)

    def set_context_len(self, n):
        self.context_len = n

    def forward(self, history):
        # history: (B, MAX_CTX, C); only the last `context_len` steps are used
        x = history[:, -self.context_len:]
        mu = x.mean(dim=1, keepdim=True)
        sd = x.std(dim=1, keepdim=True) + 1e-5
        h = self.inp((x - mu) / sd) + self.pos[-self.context_len:]
        h = self.encoder(h)
        y = self.out(h[:, -1]).view(-1, HORIZON, CHANNELS)
        return y * sd + mu


model = Forecaster()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
cmodel = torch.compile(model, backend=backend)
gen = torch.Generator().manual_seed(1)

for epoch in range(EPOCHS):
    model.set_context_len(16 + 8 * epoch)
    t_epoch, losses = [], []
    for b in range(BATCHES_PER_EPOCH):
        hist, target = sample_batch(gen)
        t0 = time.perf_counter()
        pred = cmodel(hist)
        loss = F.mse_loss(pred, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        t_epoch.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
    print(f"epoch {epoch} ctx {model.context_len:3d} loss {sum(losses) / len(losses):.4f} "
          f"first step {t_epoch[0]:.0f} ms, median step {statistics.median(t_epoch[1:]):.2f} ms")

with torch.no_grad():
    hist, target = sample_batch(torch.Generator().manual_seed(99))
    pred = cmodel(hist)
    print(f"eval mse {F.mse_loss(pred, target).item():.4f} pred-sum {pred.sum().item():.4f}")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
