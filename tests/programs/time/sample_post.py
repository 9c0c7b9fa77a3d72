"""``pt2doctor run --profile --profile-stacks -- python sample_post.py``: a small language
model's head compiled, its next-token logits sampled top-p in plain Python after each call
(``torch.sort``, ``cumsum``, ``multinomial``), the way a generation script is written
(tests/integration/test_profile.py).

No graph break, no skipped frame: the sampling is code torch.compile was never given, and it
holds most of the eager op time. ``--break``: a ``.item()`` check in the head's forward, a
graph break whose eager code is a small part of that time.
"""

import sys

import torch
from torch import nn

VOCAB, WIDTH = 8192, 64


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.out = nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = self.norm(h)
        if "--break" in sys.argv and h.abs().max().item() > 1e6:  # MARK:break
            h = h / 2
        return self.out(h)


def top_p(logits: torch.Tensor, p: float = 0.9) -> torch.Tensor:
    sorted_logits, order = torch.sort(logits, descending=True, dim=-1)  # MARK:sort
    probs = torch.softmax(sorted_logits, dim=-1)
    mask = torch.cumsum(probs, dim=-1) - probs > p
    probs = torch.softmax(sorted_logits.masked_fill(mask, float("-inf")), dim=-1)
    return torch.gather(order, -1, torch.multinomial(probs, 1))  # MARK:draw


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    head = torch.compile(Head().eval())
    state = torch.randn(4, WIDTH)
    drawn = []
    with torch.no_grad():
        for _ in range(60):
            token = top_p(head(state))
            drawn.append(int(token[0, 0]))
            state = state.roll(1, dims=0)
    print("drawn", sum(drawn))


if __name__ == "__main__":
    main()
