"""Timed calls for warmup and steady state: inputs are prepared outside the timed region,
CUDA work is synchronized before each clock read, and training is timed as forward (with the
loss), backward and optimizer step separately."""

from __future__ import annotations

import copy
import random
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pt2doctor.cases.align import apply_layout, call_context, make_optimizer
from pt2doctor.cases.case import Built, Case, Cell
from pt2doctor.cases.variants import CompileVariant, compile_model, repeated_blocks

Clock = Callable[[], float]


@dataclass(slots=True)
class ModelRunner:
    """One model (eager or compiled) with its optimizer and every cell's inputs."""

    model: Any
    builts: dict[str, Built]
    optimizer: Any = None
    clock: Clock = time.perf_counter
    cuda: bool = False


def _sync(runner: ModelRunner) -> float:
    if runner.cuda:
        import torch

        torch.cuda.synchronize()
    return runner.clock()


def timed_step(runner: ModelRunner, cell: Cell) -> dict[str, float]:
    """Seconds of one call (``call``), or of one training step (``forward``, ``backward``,
    ``optimizer``)."""
    built = runner.builts[cell.id]
    inputs = apply_layout(built.inputs, cell.layout)
    kwargs = apply_layout(built.kwargs, cell.layout)
    if not cell.train:
        with call_context(cell):
            start = _sync(runner)
            runner.model(*inputs, **kwargs)
            return {"call": _sync(runner) - start}
    assert built.loss is not None, "a training cell needs Built.loss"
    runner.optimizer.zero_grad(set_to_none=True)
    start = _sync(runner)
    with call_context(cell):
        loss = built.loss(runner.model(*inputs, **kwargs))
    forward = _sync(runner)
    loss.backward()
    backward = _sync(runner)
    runner.optimizer.step()
    done = _sync(runner)
    return {
        "forward": forward - start,
        "backward": backward - forward,
        "optimizer": done - backward,
    }


@dataclass(slots=True)
class GroupModels:
    """The group's model built once (from its first cell), eager and compiled copies of the
    same weights, and each cell's inputs."""

    variant: CompileVariant
    compiled: ModelRunner
    eager: ModelRunner
    weights: dict[str, float] = field(default_factory=dict)
    blocks: int = 0
    block_code: Any = None

    @classmethod
    def build(
        cls,
        case: Case,
        group: list[Cell],
        variant: CompileVariant,
        with_eager: bool = True,
        builts: dict[str, Built] | None = None,
    ) -> GroupModels:
        builts = builts or {cell.id: case.build(cell) for cell in group}
        first = builts[group[0].id]
        train, cuda = group[0].train, group[0].device.startswith("cuda")
        eager_model = copy.deepcopy(first.model) if with_eager else first.model
        blocks = repeated_blocks(first.model)
        compiled_model = compile_model(first.model, variant)
        runners = []
        for model in (compiled_model, eager_model):
            optimizer = make_optimizer(first, model) if train else None
            runners.append(ModelRunner(model, builts, optimizer, cuda=cuda))
        weights = {cell.id: float((case.traffic or {}).get(cell.bucket, 1.0)) for cell in group}
        code = getattr(type(blocks[0]).forward, "__code__", None) if blocks else None
        return cls(variant, runners[0], runners[1], weights, len(blocks), code)

    def traffic(self, group: list[Cell], seed: int) -> Callable[[], Cell]:
        """Cells drawn like real traffic: the case's bucket weights, a seeded generator."""
        rng = random.Random(seed)
        weights = [self.weights.get(cell.id, 1.0) for cell in group]
        return lambda: rng.choices(group, weights)[0]

    def block_sharing(self, frames: list[dict[str, Any]]) -> dict[str, Any]:
        """Whether the compiled blocks share one artifact: no recompile of the block's forward
        failed on the block's identity (an ``object_id`` guard), so its compiles come from
        inputs (shapes, requires_grad...) whatever the number of blocks."""
        code = self.block_code
        mine = [
            frame
            for frame in frames
            if code is not None
            and frame["function"] == code.co_name
            and frame["file"] == code.co_filename
            and not frame["is_resume"]
        ]
        causes = sorted(
            {g["category"] for f in mine for r in f["recompiles"] for g in r["failed_guards"]}
        )
        compiles = sum(frame["variants"] for frame in mine)
        return {
            "blocks": self.blocks,
            "block_compiles": compiles,
            "recompile_causes": causes,
            "shared": self.blocks >= 2 and compiles > 0 and "object_id" not in causes,
        }


def memory_now() -> dict[str, float | None]:
    """Peak memory so far: process RSS (MB), and CUDA allocated/reserved (MB) if in use."""
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    cuda: list[float | None] = [None, None]
    try:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
            cuda = [
                torch.cuda.max_memory_allocated() / 2**20,
                torch.cuda.max_memory_reserved() / 2**20,
            ]
    except ImportError:
        pass
    return {
        "peak_rss_mb": round(peak_rss_mb, 1),
        "cuda_allocated_mb": cuda[0],
        "cuda_reserved_mb": cuda[1],
    }
