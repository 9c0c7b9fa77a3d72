# Small 2-D GAN (8 gaussians on a ring). G and D steps are compiled.
import os, time, statistics, math
import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

Z_DIM, BATCH, ITERS = 16, 256, 60


def sample_real(n):
    k = torch.randint(0, 8, (n,))
    ang = k.float() * (2 * math.pi / 8)
    centers = torch.stack([ang.cos(), ang.sin()], 1) * 2.0
    return centers + 0.05 * torch.randn(n, 2)


G = nn.Sequential(nn.Linear(Z_DIM, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2))
D = nn.Sequential(nn.Linear(2, 128), nn.LeakyReLU(0.2), nn.Linear(128, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))


@torch.compile(backend=backend)
def d_step(real, z):
    fake = G(z).detach()
    return F.softplus(-D(real)).mean() + F.softplus(D(fake)).mean()


@torch.compile(backend=backend)
def g_step(z):
    return F.softplus(-D(G(z))).mean()   # non-saturating generator loss


times = []
for it in range(ITERS):
    t0 = time.perf_counter()
    real = sample_real(BATCH)
    z = torch.randn(BATCH, Z_DIM)

    opt_d.zero_grad(set_to_none=True)
    loss_d = d_step(real, z)
    loss_d.backward()
    opt_d.step()

    opt_g.zero_grad(set_to_none=True)
    D.requires_grad_(False)          # freeze D outside the compiled region
    loss_g = g_step(torch.randn(BATCH, Z_DIM))
    loss_g.backward()
    D.requires_grad_(True)
    opt_g.step()
    times.append(time.perf_counter() - t0)

    if it % 20 == 19:
        print(f"iter {it+1}: loss_d {loss_d.item():.4g} loss_g {loss_g.item():.4g}")

with torch.no_grad():
    s = G(torch.randn(1000, Z_DIM))
print(f"samples: mean radius {s.norm(dim=1).mean().item():.4g}  std {s.std().item():.4g}")
print(f"steady-state iteration: {statistics.median(times[10:]) * 1e3:.2f} ms (median of {len(times) - 10})")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
