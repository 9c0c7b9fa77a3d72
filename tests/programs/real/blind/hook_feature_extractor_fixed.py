import time

import torch
import torch.nn as nn

# hooks are added/removed after compiling: make Dynamo guard on them
torch._dynamo.config.skip_nnmodule_hook_guards = False
torch.manual_seed(0)


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class SmallCNN(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.stem = conv_bn(3, 16)
        self.layer1 = conv_bn(16, 32, stride=2)
        self.layer2 = conv_bn(32, 64, stride=2)
        self.layer3 = conv_bn(64, 64, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, n_classes)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


class FeatureCollector:
    """Collects pooled activations of some layers through forward hooks."""

    def __init__(self, model, layer_names):
        self.model = model
        self.layer_names = layer_names
        self.features = {}
        self.handles = []

    def attach(self):
        for name in self.layer_names:
            module = getattr(self.model, name)
            self.handles.append(module.register_forward_hook(self._make_hook(name)))

    def detach(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def _make_hook(self, name):
        def hook(module, inputs, output):
            self.features[name] = output.mean(dim=(2, 3))
        return hook


def main():
    model = SmallCNN().eval()
    cmodel = torch.compile(model)
    collector = FeatureCollector(model, ["layer1", "layer2", "layer3"])

    images = torch.randn(24, 8, 3, 32, 32)  # 24 batches of 8 images
    times, bank = [], []
    with torch.no_grad():
        for i, batch in enumerate(images):
            # only every 4th batch goes into the feature bank
            collect = i % 4 == 0
            if collect:
                collector.attach()
            t0 = time.perf_counter()
            logits = cmodel(batch)
            times.append(time.perf_counter() - t0)
            if collect:
                bank.append(torch.cat([collector.features[n] for n in collector.layer_names], dim=1))
                collector.detach()
            print(f"batch {i:2d} top class {logits.argmax(1)[0].item()} collected={collect}")

    feats = torch.cat(bank)
    print(f"feature bank: {tuple(feats.shape)}")
    steady = sorted(times[8:])
    print(f"ms_per_step: {1000 * steady[len(steady) // 2]:.3f}")
    print(f"result: {feats.abs().sum().item() + logits.abs().sum().item():.4g}")


if __name__ == "__main__":
    main()
