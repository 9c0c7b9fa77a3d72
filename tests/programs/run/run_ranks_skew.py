"""Two ranks (gloo, CPU): rank 1 alone compiles a slow extra graph before a barrier.

Both ranks compile ``step`` (backend eager) and all-reduce its loss. Then rank 1 compiles
``extra`` through a backend that takes SLOW_S seconds (a stand-in for a long Inductor
compile, MARK:slow) while rank 0 waits at the barrier. Expected under ``run --nproc 2 --live
--skew-warn S`` (S < SLOW_S): a rank-skew line naming rank 1, ``extra`` and rank 0 waiting.
Usage: under torchrun (``pt2doctor run --nproc 2 -- run_ranks_skew.py``).
"""

import os
import time

import torch
import torch.distributed as dist

SLOW_S = 10.0


def step(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(model(x)).sum()


def extra(x: torch.Tensor) -> torch.Tensor:
    return (x.relu() * 2).sum()


def slow_backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]):  # MARK:slow
    time.sleep(SLOW_S)
    return gm.forward


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 8)
    with torch.no_grad():
        loss = torch.compile(step, backend="eager")(model, torch.randn(4, 8))
        dist.all_reduce(loss)
        if rank == 1:
            torch.compile(extra, backend=slow_backend)(torch.randn(4, 8))
        dist.barrier()
    os.write(1, f"rank {rank} past the barrier\n".encode())
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
