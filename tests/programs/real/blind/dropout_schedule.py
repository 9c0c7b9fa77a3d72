import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class MLPClassifier(nn.Module):
    def __init__(self, n_in=32, hidden=128, n_classes=5, p=0.0):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.drop1 = nn.Dropout(p)
        self.fc2 = nn.Linear(hidden, hidden)
        self.drop2 = nn.Dropout(p)
        self.fc3 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        x = self.drop1(F.relu(self.fc1(x)))
        x = self.drop2(F.relu(self.fc2(x)))
        return self.fc3(x)


def dropout_at(step, total, p_max=0.3):
    """Linear dropout warm-up ("early dropout" / curriculum style)."""
    return p_max * min(1.0, step / (0.8 * total))


def set_dropout(model, p):
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = p


def main():
    X = torch.randn(2048, 32)
    y = (X[:, :5].argmax(dim=1))
    model = MLPClassifier()
    cmodel = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    total_steps, batch = 60, 64
    times = []
    for step in range(total_steps):
        set_dropout(model, dropout_at(step, total_steps))
        i = (step * batch) % X.size(0)
        t0 = time.perf_counter()
        loss = F.cross_entropy(cmodel(X[i:i + batch]), y[i:i + batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        if step % 10 == 0:
            print(f"step {step} p={model.drop1.p:.3f} loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        acc = (cmodel(X).argmax(1) == y).float().mean().item()
    print(f"train accuracy {acc:.3f}")
    steady = sorted(times[20:])
    print(f"ms_per_step: {1000 * steady[len(steady) // 2]:.3f}")
    print(f"result: {acc:.4g}")


if __name__ == "__main__":
    main()
