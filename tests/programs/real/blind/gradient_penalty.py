import os
import torch
import torch.nn as nn

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

LAMBDA_GP = 10.0

critic = nn.Sequential(
    nn.Linear(8, 64), nn.Tanh(),
    nn.Linear(64, 64), nn.Tanh(),
    nn.Linear(64, 1),
)
generator = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 8))
opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))


@torch.compile(backend=BACKEND)
def critic_loss(real, fake):
    d_real = critic(real).mean()
    d_fake = critic(fake).mean()
    # gradient penalty on random interpolates
    alpha = torch.rand(real.size(0), 1)
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d_interp = critic(interp)
    grads = torch.autograd.grad(
        outputs=d_interp, inputs=interp,
        grad_outputs=torch.ones_like(d_interp),
        create_graph=True,
    )[0]
    gp = ((grads.norm(2, dim=1) - 1) ** 2).mean()
    return d_fake - d_real + LAMBDA_GP * gp


for step in range(12):
    real = torch.randn(32, 8) * 0.5 + 1.0
    with torch.no_grad():
        fake = generator(torch.randn(32, 4))
    opt_c.zero_grad()
    loss = critic_loss(real, fake)
    loss.backward()
    opt_c.step()
    print(f"result: {loss.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
