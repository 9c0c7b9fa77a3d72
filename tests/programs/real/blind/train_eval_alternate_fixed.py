import os
import torch
import torch.nn as nn
import torch.nn.functional as F

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self, d_in=20, d_hid=64, n_cls=5):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hid)
        self.bn = nn.BatchNorm1d(d_hid)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(d_hid, n_cls)

    def forward(self, x):
        x = F.relu(self.bn(self.fc1(x)))
        return self.fc2(self.drop(x))


model = MLP()
cmodel = torch.compile(model, backend=BACKEND)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

train_x, train_y = torch.randn(320, 20), torch.randint(0, 5, (320,))
val_x, val_y = torch.randn(50, 20), torch.randint(0, 5, (50,))
BS = 16


def evaluate():
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for i in range(0, len(val_x), BS):  # 16, 16, 16, 2
            xb, yb = val_x[i:i + BS], val_y[i:i + BS]
            torch._dynamo.mark_dynamic(xb, 0)  # fixed: eval tail batch (2) reuses the eval graph
            out = cmodel(xb)
            total += F.cross_entropy(out, yb, reduction="sum").item()
            correct += (out.argmax(-1) == yb).sum().item()
            n += len(yb)
    model.train()
    return total / n, correct / n


step = 0
for epoch in range(2):
    for i in range(0, len(train_x), BS):
        xb, yb = train_x[i:i + BS], train_y[i:i + BS]
        loss = F.cross_entropy(cmodel(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 5 == 0:
            vloss, vacc = evaluate()
            print(f"step {step} train {loss.item():.4f} val {vloss:.4f} acc {vacc:.4f}")
            print(f"result: {vloss:.4f}")
    print(f"result: {loss.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
