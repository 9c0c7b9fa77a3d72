import os
import torch
import torch.nn as nn
import torch.nn.functional as F

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, dim=32, hidden=64, n_cls=5):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_cls)

    def forward(self, x, act):
        x = act(self.fc1(x))
        x = act(self.fc2(x))
        return self.out(x)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


@torch.compile(backend=BACKEND)
def train_step(x, y, act):
    logits = model(x, act)
    return F.cross_entropy(logits, y)


STEPS = 20
x = torch.randn(128, 32)
y = torch.randint(0, 5, (128,))
for step in range(STEPS):
    # anneal LeakyReLU -> ReLU over training: a fresh activation each step
    # compute the schedule value here: the lambda must not read the global int
    # `step` (Dynamo guards it as a constant -> a recompile every step)
    slope = 0.2 * (1 - step / STEPS)
    act = lambda t: F.leaky_relu(t, negative_slope=slope)
    loss = train_step(x, y, act)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} result: {loss.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters

    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
