"""``pt2doctor run --profile -- python position_ids.py``: a padded-batch text encoder that
makes its position ids from the attention mask on every call, as Hugging Face models write it
(``mask.cumsum(-1) - 1``); Inductor has no lowering for cumsum on CPU, so it runs as its ATen
kernel inside the compiled graph (tests/integration/test_perf_fixes_applied.py:
fallback_op's second program).

- ``--fixed``: the running count written as a matmul of the mask with a triangle of ones (an
  op Inductor lowers): the same ids.
Prints ``checksum`` of the outputs.
"""

import sys

import torch
from torch import nn

FIXED = "--fixed" in sys.argv
LENGTH, WIDTH = 256, 32


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tokens = nn.Embedding(1000, WIDTH)
        self.positions = nn.Embedding(LENGTH, WIDTH)
        self.out = nn.Linear(WIDTH, 8)
        self.register_buffer("upper", torch.triu(torch.ones(LENGTH, LENGTH)))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # The fix: the running count as a matmul with a triangle of ones (an op Inductor lowers).
        positions = (mask.float() @ self.upper).long() - 1 if FIXED else mask.cumsum(-1) - 1
        positions = positions.clamp(min=0) * mask
        h = self.tokens(ids) + self.positions(positions)
        return self.out(h).mean(1)


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.compile(Encoder().eval())
    ids = torch.randint(1, 1000, (16, LENGTH))
    lengths = torch.randint(LENGTH // 4, LENGTH + 1, (16,))
    mask = (torch.arange(LENGTH) < lengths[:, None]).long()
    total = 0.0
    with torch.no_grad():
        for _ in range(60):
            total += float(model(ids, mask).double().sum())
    print(f"checksum {total:.4f}")


if __name__ == "__main__":
    main()
