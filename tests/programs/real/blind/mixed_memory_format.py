import statistics
import time

import torch
import torch.nn as nn

torch.manual_seed(0)

N_BATCHES, BATCH, IMG = 24, 8, 64


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class SmallNet(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 16), conv_bn(16, 32, 2), conv_bn(32, 32), conv_bn(32, 64, 2), conv_bn(64, 64),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, n_classes)

    def forward(self, x):
        x = self.features(x)
        return self.fc(torch.flatten(self.pool(x), 1))


def camera_batches(n, g):
    # frames from the camera pipeline are decoded straight into NHWC buffers
    for _ in range(n):
        nhwc = torch.rand(BATCH, IMG, IMG, 3, generator=g)
        yield nhwc.permute(0, 3, 1, 2)


def archive_batches(n, g):
    for _ in range(n):
        yield torch.rand(BATCH, 3, IMG, IMG, generator=g)


model = SmallNet().eval().to(memory_format=torch.channels_last)
compiled = torch.compile(model)

g = torch.Generator().manual_seed(1)
stream = []
for cam, arc in zip(camera_batches(N_BATCHES // 2, g), archive_batches(N_BATCHES // 2, g)):
    stream += [cam, arc]

checksum = 0.0
times = []
with torch.inference_mode():
    for x in stream:
        t0 = time.perf_counter()
        logits = compiled(x)
        times.append((time.perf_counter() - t0) * 1000)
        checksum += float(logits.softmax(-1)[:, 0].sum())

print(f"result: {checksum:.4g}")
print(f"ms_per_step: {statistics.median(times[N_BATCHES // 2:]):.2f}")
