"""A small model compiled with the backend it names (and Inductor options), printing a checksum.

``Block.forward`` has an explicit graph break (MARK:break), so results flow through two
compiled graphs and a resume function: what pt2doctor's probes wrap. The outputs of every step
are hashed bit for bit; ``CHECKSUM <sha256>`` lets a test compare a plain run with a run under
``pt2doctor run``. Inductor options (MARK:options) are the ones a test checks in the trace.
Prints ``COUNTS {json}`` at the end.
Usage: run_checksum.py [BACKEND] [STEPS]
"""

import hashlib
import json
import sys

import torch

OPTIONS = {"trace.enabled": False, "epilogue_fusion": False}  # MARK:options


class Block(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.up = torch.nn.Linear(width, 2 * width)
        self.down = torch.nn.Linear(2 * width, width)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.up(x))
        torch._dynamo.graph_break()  # MARK:break
        return self.norm(x + self.down(h))


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "inductor"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    torch.manual_seed(0)
    block = Block(16).eval()
    options = OPTIONS if backend == "inductor" else None
    compiled = torch.compile(block, backend=backend, options=options)
    digest = hashlib.sha256()
    counts = {"calls": 0}
    with torch.no_grad():
        for _ in range(steps):
            out = compiled(torch.randn(4, 16))
            counts["calls"] += 1
            digest.update(bytes(out.contiguous().view(torch.uint8).flatten().tolist()))
    print("CHECKSUM " + digest.hexdigest(), flush=True)
    print("COUNTS " + json.dumps(counts), flush=True)


if __name__ == "__main__":
    main()
