"""Small DCGAN-style GAN on 16x16 images. The discriminator uses
torch.nn.utils.parametrizations.spectral_norm on every layer (SN-GAN).
Both nets are compiled; standard alternating D / G updates with hinge loss."""
import copy
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import spectral_norm

torch.manual_seed(0)
backend = os.environ.get("BACKEND", "inductor")

Z_DIM = 32
BATCH = 32
STEPS = 30


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(Z_DIM, 64 * 4 * 4)
        self.net = nn.Sequential(
            nn.BatchNorm2d(64), nn.ReLU(),
            nn.ConvTranspose2d(64, 32, 4, 2, 1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.ConvTranspose2d(32, 3, 4, 2, 1), nn.Tanh(),
        )

    def forward(self, z):
        return self.net(self.fc(z).view(-1, 64, 4, 4))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            spectral_norm(nn.Conv2d(3, 32, 3, 1, 1)), nn.LeakyReLU(0.1),
            spectral_norm(nn.Conv2d(32, 64, 4, 2, 1)), nn.LeakyReLU(0.1),
            spectral_norm(nn.Conv2d(64, 64, 4, 2, 1)), nn.LeakyReLU(0.1),
        )
        self.fc = spectral_norm(nn.Linear(64 * 4 * 4, 1))

    def forward(self, x):
        return self.fc(self.net(x).flatten(1)).squeeze(1)


def set_requires_grad(net, flag):
    for p in net.parameters():
        p.requires_grad_(flag)


G, D = Generator(), Discriminator()
G_eager, D_eager = copy.deepcopy(G), copy.deepcopy(D)   # eager twins for timing
cG = torch.compile(G, backend=backend)
cD = torch.compile(D, backend=backend)

# "real" data: smooth random blobs
gen = torch.Generator().manual_seed(7)
real_data = torch.tanh(F.avg_pool2d(torch.randn(STEPS * BATCH, 3, 20, 20, generator=gen), 5, 1) * 3)
noise = torch.randn(STEPS, BATCH, Z_DIM, generator=gen)


def make_opts(g, d):
    return (torch.optim.Adam(g.parameters(), 2e-4, betas=(0.0, 0.9)),
            torch.optim.Adam(d.parameters(), 2e-4, betas=(0.0, 0.9)))


def train_step(g, d, opt_g, opt_d, real, z):
    # --- discriminator update ---
    set_requires_grad(d, True)
    fake = g(z)
    d_loss = F.relu(1 - d(real)).mean() + F.relu(1 + d(fake.detach())).mean()
    opt_d.zero_grad(set_to_none=True)
    d_loss.backward()
    opt_d.step()
    # --- generator update (freeze D so no grads are computed for it) ---
    set_requires_grad(d, False)
    g_loss = -d(fake).mean()
    opt_g.zero_grad(set_to_none=True)
    g_loss.backward()
    opt_g.step()
    return d_loss, g_loss


opt_g, opt_d = make_opts(G, D)
opt_ge, opt_de = make_opts(G_eager, D_eager)
times, etimes = [], []
for step in range(STEPS):
    real = real_data[step * BATCH:(step + 1) * BATCH]
    t0 = time.perf_counter()
    d_loss, g_loss = train_step(cG, cD, opt_g, opt_d, real, noise[step])
    d_val, g_val = d_loss.item(), g_loss.item()
    times.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    train_step(G_eager, D_eager, opt_ge, opt_de, real, noise[step])[0].item()
    etimes.append((time.perf_counter() - t0) * 1000)
    if step % 10 == 0 or step == STEPS - 1:
        print(f"step {step:3d} d_loss {d_val:.4f} g_loss {g_val:.4f}")

with torch.no_grad():
    D.eval()
    score = D(real_data[:64]).mean().item()
    sigma = torch.linalg.matrix_norm(D.fc.weight, ord=2).item()
print(f"D(real) mean {score:.4f}  spectral norm of fc weight {sigma:.4f}")
print(f"G fc weight sum {G.fc.weight.sum().item():.4f}")
print(f"compiled ms/step (median, last 15): {statistics.median(times[-15:]):.2f} ms")
print(f"eager    ms/step (median, last 15): {statistics.median(etimes[-15:]):.2f} ms")
print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
