"""A compiled training step with gradient accumulation, as a blind-written one had it: the step
number picks whether the optimizer steps (``if (step + 1) % ACCUM == 0:``), after a graph break
at ``loss.backward()``. In the code after the break ``step`` goes dynamic, one variant guards
``((1 + step) % 2) == 0`` and the next ``!= 0``, the other side of the branch; that next one
comes from the FX graph cache. Not a stale constant: both variants guard the expression, and
the checksum is the same with the caches off (tests/integration/test_cold_start.py)."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ACCUM = 2


@torch.compile
def train_step(x, y, step):
    logits = model(x)
    loss = F.cross_entropy(logits, y) / ACCUM
    loss.backward()
    acc = (logits.argmax(-1) == y).float().mean()
    if (step + 1) % ACCUM == 0:  # MARK:branch
        opt.step()
        opt.zero_grad(set_to_none=True)
    return loss.detach() * ACCUM, acc.detach()


x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
total = 0.0
for step in range(8):
    loss, acc = train_step(x, y, step)
    total += float(loss) + float(acc)
print(f"checksum: {total:.6f}")
