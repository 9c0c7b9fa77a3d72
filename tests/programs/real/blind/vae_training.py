import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ConvVAE(nn.Module):
    def __init__(self, latent_dim=16):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(1, 16, 4, stride=2, padding=1), nn.ReLU(),   # 28 -> 14
            nn.Conv2d(16, 32, 4, stride=2, padding=1), nn.ReLU(),  # 14 -> 7
            nn.Flatten(),
        )
        self.fc_mu = nn.Linear(32 * 7 * 7, latent_dim)
        self.fc_logvar = nn.Linear(32 * 7 * 7, latent_dim)
        self.fc_dec = nn.Linear(latent_dim, 32 * 7 * 7)
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(16, 1, 4, stride=2, padding=1), nn.Sigmoid(),
        )
        self.history = {"recon": [], "kl": []}

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.fc_mu(h), self.fc_logvar(h)
        z = self.reparameterize(mu, logvar)
        recon = self.dec(self.fc_dec(z).view(-1, 32, 7, 7))

        recon_loss = F.binary_cross_entropy(recon, x, reduction="sum") / x.size(0)
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
        # keep per-step numbers for the training curve
        self.history["recon"].append(recon_loss.item())
        self.history["kl"].append(kl.item())
        return recon_loss + kl


def make_data(n=512):
    # blurry blobs in [0, 1] as a stand-in for MNIST
    g = torch.Generator().manual_seed(1)
    centers = torch.rand(n, 2, generator=g) * 20 + 4
    yy, xx = torch.meshgrid(torch.arange(28.0), torch.arange(28.0), indexing="ij")
    d2 = (yy - centers[:, 0, None, None]) ** 2 + (xx - centers[:, 1, None, None]) ** 2
    return torch.exp(-d2 / 18.0).unsqueeze(1)


def main():
    data = make_data()
    model = ConvVAE()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    cmodel = torch.compile(model)

    batch = 32
    times = []
    for step in range(30):
        i = (step * batch) % data.size(0)
        x = data[i:i + batch]
        t0 = time.perf_counter()
        loss = cmodel(x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        print(f"step {step:2d} loss {loss.item():8.3f} "
              f"recon {model.history['recon'][-1]:8.3f} kl {model.history['kl'][-1]:6.3f}")

    steady = sorted(times[10:])
    print(f"ms_per_step: {1000 * steady[len(steady) // 2]:.3f}")
    print(f"result: {loss.item():.4g}")


if __name__ == "__main__":
    main()
