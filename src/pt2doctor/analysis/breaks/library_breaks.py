"""Graph breaks in library code whose cause and fix are known: breaks PyTorch places on purpose,
and a library's own break with a fix for the user's code.

A site is matched by the file's path inside its package and the function, never by line (lines
move between versions). Each fix for the user's code is applied to a small model on torch 2.13
in tests/integration/test_recompile_fixes_applied.py (the break is gone, the graphs fewer);
the optimizer's break is checked on a real compiled step in test_heat_shapes.py.
"""

from __future__ import annotations

from typing import NamedTuple

from pt2doctor.analysis.breaks.advice import LOGGING_MODULE_ADVICE, OwnFix
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import GraphBreakEvent


class KnownBreak(NamedTuple):
    """What pt2doctor knows of a library's break site."""

    fix: str
    """Replaces the category's paragraph (analysis/breaks/advice.py)."""
    by_design: bool
    """PyTorch breaks here on purpose: nothing to fix, torch's own hints do not apply."""


OPTIMIZER_STEP = (
    "PyTorch breaks the graph here on purpose, around every optimizer step: the step is traced "
    "as a graph of its own under no_grad, so AOTAutograd treats it as inference and Inductor "
    "updates the parameters in place instead of allocating a copy of each "
    "(pytorch/pytorch#104053). A compiled `optimizer.step()` always has this break; it is not "
    "yours to remove, and nothing needs fixing."
)

LR_SCHEDULER_STEP = (
    "An LR scheduler wraps `optimizer.step` in a function of torch/optim/lr_scheduler.py (it "
    "counts the optimizer's steps), and Dynamo does not trace into that file, so the call "
    "breaks here. The optimizer's own `step` is then compiled as a frame of its own, so the "
    "update is still one compiled graph; what the break costs is one more frame entry per "
    "step. PyTorch's, by design: nothing to fix."
)

ZERO_GRAD = (
    "Dynamo does not trace `Optimizer.zero_grad` (it is marked skipped: it only resets each "
    "parameter's .grad), so the compiled function splits here. Call it outside the compiled "
    "function, where it stands in the step (before the call when it comes first, after it when "
    "it comes last): the same gradients, and no graph split here. torch's "
    "`dont_skip_tracing` hint would trace a loop over every parameter into the graph instead."
)

GRAD_SCALER = (
    "Dynamo does not trace torch.amp.GradScaler (`{method}` is marked skipped), so each of "
    "its calls inside the compiled function splits it, and tracing into it (torch's "
    "`dont_skip_tracing` hint) brings more breaks. Call `scaler.scale(loss).backward()`, "
    "`scaler.step(opt)` and `scaler.update()` outside the compiled function, which returns the "
    "loss. Under bfloat16 autocast the scaler is not needed at all (bfloat16 has float32's "
    "range; loss scaling is for float16): drop it."
)

TORCH_ASKS = (
    "PyTorch's own code asks for this break ({code} in {path}); it is not yours to remove. "
    "If it is hot and splits your graph, call that torch API outside the compiled function."
)

HF_LOSS_TYPE = (
    'transformers\' `loss_function` logs "loss_type=None ... unrecognized" from inside the '
    "compiled forward on every call with labels: the model's class name maps to no loss type "
    "(GPT2LMHeadModel is one), and Dynamo cannot trace the logger, so the loss becomes a graph "
    "of its own and each wrapper of forward a frame of its own. Set "
    '`model.loss_type = "{loss}"` (the loss it falls back to) before the first call: the '
    "property then returns the loss without logging, and forward and its loss compile as one "
    "graph."
)

HF_USE_CACHE = (
    'transformers warns "`use_cache=True` is incompatible with gradient checkpointing" from '
    "inside the compiled forward on every training call: gradient checkpointing is on and the "
    "config keeps `use_cache=True` (its default), and Dynamo cannot trace the logger. The "
    "warning sits in a loop of transformers' wrapper, so Dynamo runs that wrapper eagerly and "
    "the model's forward compiles in pieces. Set `model.config.use_cache = False` for training "
    "(or pass `use_cache=False` to the call): nothing is logged, and forward compiles without "
    "the break."
)

_GRAD_SCALER = lazy_compile(r"GradScaler\.\w+")
# The logging module's module-level functions (each checks the root logger's handlers).
_ROOT_LOGGING = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical",
                           "log"})  # fmt: skip
_DEFAULT_LOSS = lazy_compile(r"default loss: `(\w+?)Loss`")
_TORCH_FILE = lazy_compile(r"(?:^|/)(torch/[\w/]+\.py)$")


def _root_check(event: GraphBreakEvent) -> bool:
    """The break is the module-level function's own check of the root logger's handlers
    (``if len(root.handlers) == 0``), not a ``Logger`` method of the same name (``log.debug``
    breaks at the user's line; a break inside the method is that line's)."""
    code = event.site.code if event.site else None
    return code is None or "root.handlers" in code


def known_break(
    path: str | None, function: str | None, event: GraphBreakEvent
) -> KnownBreak | None:
    """The known cause and fix of a break at ``function`` in ``path``; None when unknown."""
    if path is None or function is None:
        return None
    path = path.replace("\\", "/")
    if path.endswith("torch/optim/optimizer.py") and function == "_use_grad":
        return KnownBreak(OPTIMIZER_STEP, True)
    scaler = _GRAD_SCALER.search(event.reason)
    if "marked as skipped" in event.reason and scaler is not None:
        return KnownBreak(OwnFix(GRAD_SCALER.format(method=scaler[0])), False)
    if "marked as skipped" in event.reason and "`Optimizer.zero_grad`" in event.reason:
        return KnownBreak(OwnFix(ZERO_GRAD), False)  # at the user's own `opt.zero_grad()`
    if "marked as skipped" in event.reason and "torch/optim/lr_scheduler.py" in event.reason:
        return KnownBreak(LR_SCHEDULER_STEP, True)  # at the user's own `optimizer.step()`
    if path.endswith("transformers/modeling_utils.py") and function == "loss_function":
        found = _DEFAULT_LOSS.search(event.reason)
        if found:  # the warning names the loss it falls back to
            return KnownBreak(HF_LOSS_TYPE.format(loss=found.group(1)), False)
    if path.endswith("logging/__init__.py") and function in _ROOT_LOGGING and _root_check(event):
        return KnownBreak(OwnFix(LOGGING_MODULE_ADVICE), False)  # logging.info(...) in user code
    if path.endswith("transformers/utils/generic.py") and "gradient checkpointing" in event.reason:
        return KnownBreak(HF_USE_CACHE, False)
    torch_file = _TORCH_FILE.search(path)
    if torch_file and "graph_break()" in event.gb_type:
        code = (event.site.code if event.site else None) or "torch._dynamo.graph_break()"
        return KnownBreak(TORCH_ASKS.format(code=code.strip(), path=torch_file.group(1)), False)
    return None
