import torch, torch.nn as nn, time, sys

class Scorer(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    def forward(self, feats):
        return torch.sigmoid(self.net(feats)).squeeze(-1)

def score_items(model, items):
    scores = []
    for it in items:                       # one item at a time
        scores.append(model(it.unsqueeze(0)))
    return torch.cat(scores)

def main(n_items=int(sys.argv[1]) if len(sys.argv) > 1 else 2000):
    torch.manual_seed(0)
    scorer = Scorer().eval()
    cscorer = torch.compile(scorer)
    items = torch.randn(n_items, 16)
    with torch.no_grad():
        score_items(cscorer, items[:10])
        t0 = time.perf_counter()
        s = score_items(cscorer, items)
        dt = time.perf_counter() - t0
    print(f"scored {len(s)} items in {dt*1e3:.1f} ms ({dt/len(s)*1e6:.1f} us/item)")

if __name__ == "__main__":
    main()
