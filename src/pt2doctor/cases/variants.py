"""Compile variants a check measures side by side: each mode, and optionally *regional*
compilation (each repeated block compiled instead of the whole model)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pt2doctor import torchcompat
from pt2doctor.errors import UsageError

REGIONAL = "regional"


@dataclass(frozen=True, slots=True)
class CompileVariant:
    """How the model is compiled: ``backend``, Inductor ``mode``, whole model or regional."""

    mode: str = "default"
    backend: str = "inductor"
    regional: bool = False

    @property
    def name(self) -> str:
        return f"{REGIONAL}:{self.mode}" if self.regional else self.mode

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.mode,
            "backend": self.backend,
            "regional": self.regional,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompileVariant:
        return cls(str(data["mode"]), str(data["backend"]), bool(data["regional"]))


def requested_variants(modes: Sequence[str], backend: str) -> list[CompileVariant]:
    """The whole-model variants for ``--modes`` (``all``: every mode Inductor lists)."""
    known = torchcompat.compile_modes() or {"default": {}}
    backends = torchcompat.known_backends()
    if backends is not None and backend not in backends:
        raise UsageError(f"unknown backend {backend!r} (one of {', '.join(backends)})")
    wanted = list(known) if list(modes) == ["all"] else list(dict.fromkeys(modes))
    for mode in wanted:
        if mode not in known:
            raise UsageError(f"unknown compile mode {mode!r} (one of {', '.join(known)}, all)")
    if backend != "inductor" and wanted != ["default"]:
        raise UsageError(f"--modes apply to the inductor backend only, not {backend!r}")
    return [CompileVariant(mode, backend) for mode in wanted]


def not_applicable(variant: CompileVariant, device: str) -> str | None:
    """Why ``variant`` cannot run on ``device`` (CUDA graphs on a CPU), or None."""
    options = (torchcompat.compile_modes() or {}).get(variant.mode, {})
    if torchcompat.uses_cuda_graphs(options) and not device.startswith("cuda"):
        return "not applicable: this mode uses CUDA graphs, which need a CUDA device"
    return None


def repeated_blocks(model: Any) -> list[Any]:
    """The largest ``nn.ModuleList`` whose entries are all of one user-defined class (>= 2 of
    them). torch's own modules (``nn.Linear``...) do not count: Dynamo skips frames inside
    torch, so compiling one of them alone compiles nothing."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return []
    best: list[Any] = []
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) >= 2:
            blocks = list(module)
            kinds = {type(block) for block in blocks}
            user_class = not next(iter(kinds)).__module__.startswith("torch.")
            if len(kinds) == 1 and user_class and len(blocks) > len(best):
                best = blocks
    return best


def compile_model(model: Any, variant: CompileVariant) -> Any:
    """Compile ``model`` as ``variant`` says; regional compiles the repeated blocks in place."""
    import torch

    kwargs: dict[str, Any] = {"backend": variant.backend}
    if variant.backend == "inductor" and variant.mode != "default":
        kwargs["mode"] = variant.mode
    if not variant.regional:
        return torch.compile(model, **kwargs)
    blocks = repeated_blocks(model)
    if not blocks:
        raise ValueError("no repeated block (an nn.ModuleList of one class) to compile")
    for block in blocks:
        block.compile(**kwargs)
    return model
