"""Forward hooks attached for some batches only, each storing a Python float (``.item()``).

Derived from the blind tests/programs/real/blind/hook_feature_extractor.py (its author's CNN
and feature collector), with the hook keeping ``output.mean().item()`` (MARK:item) instead of
a tensor: a graph break in the hook, whose torch hint is ``capture_scalar_outputs``. With that
setting the hook is traced into the compiled graph, and Dynamo does not guard on module hooks
(``skip_nnmodule_hook_guards``): the hooks attached later never run again, and the feature
bank silently changes. pt2doctor must never propose it here
(tests/integration/test_try_fixes.py). Prints ``result: X`` (the bank and the last logits).
"""

import torch
from torch import nn

torch.manual_seed(0)


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
    )


class SmallCNN(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.stem = conv_bn(3, 8)
        self.layer1 = conv_bn(8, 16, stride=2)
        self.layer2 = conv_bn(16, 16, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, n_classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


class FeatureCollector:
    """Mean activations of some layers through forward hooks, as Python floats."""

    def __init__(self, model, layer_names):
        self.model, self.layer_names = model, layer_names
        self.features, self.handles = {}, []

    def attach(self):
        for name in self.layer_names:
            module = getattr(self.model, name)
            self.handles.append(module.register_forward_hook(self._make_hook(name)))

    def detach(self):
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def _make_hook(self, name):
        def hook(module, inputs, output):
            self.features[name] = output.mean().item()  # MARK:item

        return hook


def main():
    model = SmallCNN().eval()
    cmodel = torch.compile(model)
    collector = FeatureCollector(model, ["layer1", "layer2"])
    bank = []
    with torch.no_grad():
        for i, batch in enumerate(torch.randn(12, 4, 3, 16, 16)):
            collect = i % 4 == 0  # only every 4th batch goes into the feature bank
            if collect:
                collector.attach()
            logits = cmodel(batch)
            if collect:
                bank.append([collector.features.pop(n, 0.0) for n in collector.layer_names])
                collector.detach()
    print(f"bank: {bank}")
    print(f"result: {sum(map(sum, bank)) + logits.abs().sum().item():.6g}")


if __name__ == "__main__":
    main()
