import os
import torch
import torch.nn as nn

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def to_tensor(batch):
    # FIX: normalize the input type outside the compiled region, so the
    # compiled forward always sees one tensor (no type guard, no 2nd graph)
    if isinstance(batch, dict):
        x = batch["x"]
        if "mask" in batch:
            x = x * batch["mask"]
        return x
    return batch


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
cmodel = torch.compile(model, backend=BACKEND)
loss_fn = nn.CrossEntropyLoss()

for step in range(8):
    x = torch.randn(8, 16)
    y = torch.randint(0, 4, (8,))
    if step % 2 == 0:
        batch = x                      # plain tensor from one loader
    else:
        batch = {"x": x, "mask": (torch.rand(8, 16) > 0.1).float()}  # dict from another
    out = cmodel(to_tensor(batch))
    loss = loss_fn(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"result: {loss.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
