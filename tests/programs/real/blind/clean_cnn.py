import os
import torch
import torch.nn as nn
import torch.nn.functional as F

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class SmallCNN(nn.Module):
    def __init__(self, n_cls=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 7 * 7, n_cls)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))  # 28 -> 14
        x = self.pool(F.relu(self.bn2(self.conv2(x))))  # 14 -> 7
        return self.fc(torch.flatten(x, 1))


model = SmallCNN()
cmodel = torch.compile(model, backend=BACKEND)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

# fixed-size dataset that divides evenly into batches: every call sees the same shape
N, BS = 512, 32
data = torch.randn(N, 1, 28, 28)
labels = torch.randint(0, 10, (N,))

model.train()
for epoch in range(2):
    perm = torch.randperm(N)
    running = 0.0
    for i in range(0, N, BS):
        idx = perm[i:i + BS]
        xb, yb = data[idx], labels[idx]
        loss = F.cross_entropy(cmodel(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.item()
    avg = running / (N // BS)
    print(f"epoch {epoch} avg loss {avg:.4f}")
    print(f"result: {avg:.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
