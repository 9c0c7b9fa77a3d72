"""``pt2doctor run --profile -- python loader_eval.py``: an evaluation loop over a DataLoader whose
Dataset makes each sample in Python (a crop, a colour jitter and a per-image normalisation), the model compiled,
the way a validation script is written (tests/integration/test_profile.py).

- As written, the DataLoader has no workers (``num_workers=0``): every step waits while its
  batch is made, in this process.
- ``--workers N``: the DataLoader's ``num_workers`` (data_loading's fix). The crops depend on
  the index only, so the batches, their order and the printed checksum are the same.
"""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

WORKERS = int(sys.argv[sys.argv.index("--workers") + 1]) if "--workers" in sys.argv else 0


class Crops(Dataset[tuple[torch.Tensor, int]]):
    def __init__(self, n: int) -> None:
        self.images = torch.randn(n, 3, 40, 40, generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        top, left = (i * 7) % 8, (i * 3) % 8
        crop = self.images[i][:, top : top + 32, left : left + 32]
        for step in range(32):  # a colour jitter, one small op after another
            crop = (crop * (1.0 + 0.01 * ((i + step) % 5 - 2))).clamp_(-3.0, 3.0)
        mean = crop.mean(dim=(1, 2), keepdim=True)
        std = crop.std(dim=(1, 2), keepdim=True)
        return (crop - mean) / (std + 1e-5), i % 10


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one core for the step; a worker gets the other
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 10),
    ).eval()  # fmt: skip
    compiled = torch.compile(model)
    loader = DataLoader(Crops(32 * 60), batch_size=32, num_workers=WORKERS,
                        persistent_workers=WORKERS > 0)  # fmt: skip
    total, correct = 0.0, 0
    with torch.no_grad():
        for images, labels in loader:
            logits = compiled(images)
            total += float(logits.double().sum())
            correct += int((logits.argmax(dim=1) == labels).sum())
    print(f"checksum {total:.6f} correct {correct}")


if __name__ == "__main__":
    main()
