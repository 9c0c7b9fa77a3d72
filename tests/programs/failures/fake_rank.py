"""``pt2doctor ablate -- python fake_rank.py``: a fused attention kernel registered as a custom
op whose ``register_fake`` was written for (batch, seq, dim) inputs, called with (batch, heads,
seq, dim): the fake drops a dim, and Dynamo's fake-tensor run of the next op fails before any
graph names the op. opcheck, run on the program with torch.compile off, finds the fake."""

import torch
import torch.nn.functional as F
from torch import nn


@torch.library.custom_op("pt2doctor_failures::fused_attention", mutates_args=())
def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v)


@fused_attention.register_fake
def _(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return q.new_empty(q.shape[0], q.shape[1], v.shape[-1])  # MARK:fake


class Attention(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        return self.out(fused_attention(q, k, v).transpose(1, 2).reshape(b, s, d)) + x


with torch.no_grad():
    print(torch.compile(Attention())(torch.randn(2, 8, 16)).shape)
