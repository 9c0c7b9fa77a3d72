"""A hand-written language model with a rotary-embedding cache keyed by sequence length, as
people write them, fed sequences of growing length (tests/integration/test_real_programs.py).

``--fixed`` applies the fix pt2doctor prints (slice a table built once for the longest length
instead of caching one per length); ``--maybe-mark`` and ``--mark`` try marking the length
dynamic, which the fix says does not help. Prints the graphs Dynamo compiled."""

import sys

import torch
from torch import nn

FIXED = "--fixed" in sys.argv
MAX_LEN = 64


class Rotary(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self._cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        t = torch.arange(MAX_LEN, dtype=torch.float32)
        freqs = torch.outer(t, torch.arange(0, dim, 2, dtype=torch.float32))
        self.register_buffer("cos_table", freqs.cos().repeat_interleave(2, -1), persistent=False)
        self.register_buffer("sin_table", freqs.sin().repeat_interleave(2, -1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq_len = x.shape[1]
        if FIXED:
            return x * self.cos_table[:seq_len] + x * self.sin_table[:seq_len]
        if seq_len not in self._cache:  # MARK:cache
            t = torch.arange(seq_len, dtype=torch.float32)
            freqs = torch.outer(t, torch.arange(0, self.dim, 2, dtype=torch.float32))
            self._cache[seq_len] = (freqs.cos(), freqs.sin())
        cos, sin = self._cache[seq_len]
        return x * cos.repeat_interleave(2, -1) + x * sin.repeat_interleave(2, -1)


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.rotary = Rotary(16)
        self.head = nn.Linear(16, 100)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.rotary(self.embed(ids)))


model = torch.compile(TinyLM(), backend="eager")
for length in (8, 9, 10, 11, 12, 13):
    ids = torch.randint(0, 100, (2, length))
    if "--maybe-mark" in sys.argv:
        torch._dynamo.maybe_mark_dynamic(ids, 1)
    if "--mark" in sys.argv:
        torch._dynamo.mark_dynamic(ids, 1)
    model(ids)
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
