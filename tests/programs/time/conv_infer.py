"""A small convolutional classifier served on CPU: eval mode, under torch.no_grad(), compiled,
one batch per call (pt2doctor's own test program: library_bound, and freezing tried)."""

import argparse
import time

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--calls", type=int, default=80)
parser.add_argument("--freezing", action="store_true", help="the fix, applied by hand")
args = parser.parse_args()
if args.freezing:
    import torch._inductor.config

    torch._inductor.config.freezing = True
torch.manual_seed(0)


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            block(3, 32),
            block(32, 32),
            nn.MaxPool2d(2),
            block(32, 64),
            block(64, 64),
            nn.MaxPool2d(2),
        )
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


model = Classifier().eval()
compiled = torch.compile(model)
images = torch.randn(8, 3, 32, 32)
times = []
with torch.no_grad():
    for _ in range(args.calls):
        start = time.perf_counter()
        out = compiled(images)
        times.append(time.perf_counter() - start)
print(f"ms_per_call: {1000 * sorted(times)[len(times) // 2]:.4f}")
print(f"result: {out.sum().item():.6g}")
