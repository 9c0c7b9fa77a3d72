"""Acceptance cases for a small transformer: ``pt2doctor check examples/cases/transformer_block.py``.

The matrix: eval and train, float32 and bfloat16, two sequence-length buckets. Cells that differ
only in sequence length share one model (one worker process, one compiled artifact): warmup
compiles them all, and steady-state traffic is drawn from them, short sequences three times as
often as long ones. The model repeats one block class in an ``nn.ModuleList``, so check also
measures *regional* compilation (each block compiled instead of the whole model).
"""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix

WIDTH, HEADS, BATCH = 64, 4, 4


class Block(nn.Module):
    """Pre-norm attention + MLP, with dropout (train cells check it aligns under the same seed)."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.attn = nn.MultiheadAttention(WIDTH, HEADS, dropout=0.1, batch_first=True)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH), nn.Dropout(0.1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    def __init__(self, depth: int = 2) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(depth))
        self.head = nn.Linear(WIDTH, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def build(cell: Cell) -> Built:
    """The model and inputs for one cell of the matrix (called once per cell)."""
    torch.manual_seed(0)
    model = TinyTransformer().to(cell.device, cell.torch_dtype).train(cell.train)
    x = torch.randn(BATCH, cell.shape, WIDTH, device=cell.device, dtype=cell.torch_dtype)
    return Built(
        model,
        (x,),
        loss=lambda out: out.float().pow(2).mean(),
        optimizer=lambda params: torch.optim.AdamW(params, lr=1e-3),
    )


CASES = [
    Case(
        "transformer",
        build,
        Matrix(
            shapes={"seq16": 16, "seq32": 32},
            dtypes=("float32", "bfloat16"),
            train=(False, True),
        ),
        traffic={"seq16": 3, "seq32": 1},
    )
]
