"""Record a fusion log for tests/unit/test_fusion_log.py: ``python record_fusion_log.py``.

Compiles a small block (LayerNorm, Linear + GELU, a softmax over a cumulative sum, a residual)
with Inductor on the first CUDA device when there is one, else on the CPU, with
TORCH_LOGS=fusion and the caches off, and writes the log as ``<device>-torch<version>.log``
here, its first line saying how it was made. A CUDA log is Triton's (``numel/rnumel
mismatch`` and the other SIMD reasons); a CPU log has only the scheduler's reasons (the C++
backend logs none).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = r"""
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(256)
        self.up = nn.Linear(256, 512)
        self.down = nn.Linear(512, 256)

    def forward(self, x):
        h = self.norm(x)
        h = nn.functional.gelu(self.up(h))
        h = self.down(h)
        s = torch.softmax(h.cumsum(dim=-1) / h.shape[-1], dim=-1)
        return x + h * s + s.sum(dim=0, keepdim=True)


model = Block().to(device)
compiled = torch.compile(model)
x = torch.randn(64, 256, device=device, requires_grad=True)
compiled(x).sum().backward()
print(device, torch.__version__)
"""


def main() -> int:
    env = dict(os.environ, TORCH_LOGS="fusion", TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        return done.returncode
    device, version = done.stdout.split()
    name = f"{device}-torch{version.split('+')[0]}.log"
    header = f"# recorded by tests/data/fusion/record_fusion_log.py on {device}, torch {version}\n"
    (HERE / name).write_text(header + done.stderr)
    print(f"wrote {HERE / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
