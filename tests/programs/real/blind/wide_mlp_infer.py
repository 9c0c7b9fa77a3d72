import torch, torch.nn as nn, time, sys

class Encoder(nn.Module):
    def __init__(self, d=512, h=2048, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, d)) for _ in range(depth))
        self.norm = nn.LayerNorm(d)
    def forward(self, x):
        for b in self.blocks:
            x = x + b(x)
        return self.norm(x)

def main(n=int(sys.argv[1]) if len(sys.argv) > 1 else 40):
    torch.manual_seed(0)
    enc = Encoder().eval()
    cenc = torch.compile(enc)
    batch = torch.randn(128, 512)
    with torch.no_grad():
        for _ in range(3):
            cenc(batch)
        t0 = time.perf_counter()
        for _ in range(n):
            emb = cenc(batch)
        dt = (time.perf_counter() - t0) / n
    print(f"{dt*1e3:.2f} ms/batch", emb.sum().item())

if __name__ == "__main__":
    main()
