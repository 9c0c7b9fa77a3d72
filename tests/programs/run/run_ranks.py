"""Two ranks (gloo, CPU) train the same tiny model, but rank 1 also sees a batch of another size.

Each rank compiles ``step`` (backend from ``pt2doctor run --backend``, else eager) once for the
common shape; rank 1 then calls it with a longer batch (MARK:rank_shape), a recompile that only
rank 1 does. Both ranks all-reduce a loss every step, so the collectives stay matched. Each
rank counts its own calls into ``step`` and prints one line ``COUNTS {json}`` with its rank.
Usage: under torchrun (``pt2doctor run --nproc 2 -- run_ranks.py [STEPS]``).
"""

import json
import os
import sys

import torch
import torch.distributed as dist

WIDTH, BATCH, RANK_ONE_BATCH = 8, 4, 6


def step(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:  # MARK:step
    return torch.tanh(model(x)).sum()


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(WIDTH, WIDTH)
    compiled_step = torch.compile(step, backend="eager")
    calls = other_shape_calls = 0
    with torch.no_grad():
        for index in range(steps):
            batch = BATCH
            if rank == 1 and index == steps - 1:
                batch = RANK_ONE_BATCH  # MARK:rank_shape
                other_shape_calls += 1
            loss = compiled_step(model, torch.randn(batch, WIDTH))
            calls += 1
            dist.all_reduce(loss)
    counts = {"rank": rank, "step_calls": calls, "other_shape_calls": other_shape_calls}
    # One write of one line: torchrun passes both ranks' stdout through one pipe, and print()
    # writes the text and its newline separately (seen interleaved as "...}COUNTS {...").
    os.write(sys.stdout.fileno(), f"COUNTS {json.dumps(counts)}\n".encode())
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
