import torch, torch.nn as nn, torch.nn.functional as F
import time, sys

torch.manual_seed(0)

class MLP(nn.Module):
    def __init__(self, d_in=128, d_h=256, n_cls=10, depth=4):
        super().__init__()
        layers = []
        d = d_in
        for _ in range(depth):
            layers += [nn.Linear(d, d_h), nn.LayerNorm(d_h), nn.GELU()]
            d = d_h
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(d_h, n_cls)
    def forward(self, x):
        return self.out(self.body(x))

def make_opt(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

def main(steps=int(sys.argv[1]) if len(sys.argv) > 1 else 60):
    model = MLP()
    opt = make_opt(model)
    cmodel = torch.compile(model)
    X = torch.randn(64 * 8, 128)
    Y = torch.randint(0, 10, (64 * 8,))
    t0 = None
    for step in range(steps):
        if step == 10:
            t0 = time.perf_counter()
        i = (step % 8) * 64
        xb, yb = X[i:i + 64], Y[i:i + 64]
        logits = cmodel(xb)
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    dt = (time.perf_counter() - t0) / (steps - 10)
    print(f"loss {loss.item():.4f}  {dt*1e3:.3f} ms/step")

if __name__ == "__main__":
    main()
