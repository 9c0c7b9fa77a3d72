"""``pt2doctor run --profile --profile-stacks --try-fixes 1 -- python postprocess_outside.py``:
an encoder compiled, its scores post-processed after each call by a plain Python function
(a chain of elementwise ops over the whole output: standardize, a gated squash, a clamp) that
the program never gave torch.compile (tests/integration/test_profile.py, test_claims.py).

The post-processing holds most of the eager op time, and its ops fuse: compiled, the chain is
one or two loops over the output instead of one pass per op.
"""

import torch
from torch import nn

ROWS, WIDTH, OUT = 64, 64, 8192


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.out = nn.Linear(WIDTH, OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.proj(x)))


def postprocess(scores: torch.Tensor) -> torch.Tensor:
    centered = scores - scores.mean(dim=-1, keepdim=True)  # MARK:post
    z = centered / (centered.pow(2).mean(dim=-1, keepdim=True) + 1e-5).sqrt()
    gated = torch.sigmoid(z) * torch.tanh(0.5 * z) + 0.1 * z.clamp(-3.0, 3.0)
    return (gated * gated + gated.abs()).sum(dim=-1)


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    encoder = torch.compile(Encoder().eval())
    batch = torch.randn(ROWS, WIDTH)
    total = 0.0
    with torch.no_grad():
        for _ in range(60):
            total += float(postprocess(encoder(batch)).sum())
            batch = batch.roll(1, dims=0)
    print(f"checksum {total:.4f}")


if __name__ == "__main__":
    main()
