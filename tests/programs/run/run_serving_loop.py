"""A serving loop whose late request recompiles after warmup, then waits to be released.

A tiny encoder (``torch.compile``) serves batches of 8 tokens for 1.5 s after its first
compile ends, with a
graph break in its forward (MARK:break). Then one request of 12 tokens recompiles the
frame and its resume function (the size becomes dynamic, MARK:late), and the loop waits
until the file named by its first argument exists (at most 60 s: it says which) before its
last marker. Expected under ``run --live --steady-after 1``: a recompile-after-warmup line
while it waits; its counts on ``--metrics-port`` equal the final report's.
"""

import sys
import time
from pathlib import Path

import torch


class Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(64, 16)
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, tokens):
        x = self.embed(tokens)
        torch._dynamo.graph_break()  # MARK:break
        return self.proj(x).mean(1)


def main() -> None:
    release = Path(sys.argv[1])
    torch.manual_seed(0)
    model = torch.compile(Encoder())
    with torch.no_grad():
        model(torch.randint(0, 64, (2, 8)))  # the first compile: warmup counts from its end
        start, served = time.monotonic(), 1
        while time.monotonic() - start < 1.5:
            model(torch.randint(0, 64, (2, 8)))
            served += 1
            time.sleep(0.05)
        print(f"served {served} batches of 8 tokens", flush=True)
        print("request of 12 tokens", flush=True)
        model(torch.randint(0, 64, (2, 12)))  # MARK:late
        deadline = time.monotonic() + 60
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    print("released" if release.exists() else "not released within 60 s", flush=True)


if __name__ == "__main__":
    main()
