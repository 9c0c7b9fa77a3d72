import os
import torch
import torch.nn as nn

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

mean = torch.tensor([0.5, 0.4, 0.3])
std = torch.tensor([0.25, 0.25, 0.25])

model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5),
).eval()


@torch.compile(backend=BACKEND)
def predict(x):
    # normalize in place to save a copy
    x.sub_(mean[None, :, None, None]).div_(std[None, :, None, None])
    return model(x)


# a small "dataset" already in memory, iterated in batches
data = torch.rand(50, 3, 8, 8)
B = 16

with torch.no_grad():
    for i in range(0, data.shape[0], B):
        x = data[i:i + B]
        logits = predict(x)
        # reuse the (now normalized) input afterwards
        print(f"result: {logits.sum().item():.4f}")
        print(f"result: {x.mean().item():.4f}")

# the whole dataset got normalized in place through the views
print(f"result: {data.mean().item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
