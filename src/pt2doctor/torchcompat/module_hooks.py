"""Hooks registered on or removed from ``nn.Module``\\ s while the program runs (capture's
evidence for ``hook_changed_after_compile``), and the Dynamo setting that decides whether
compiled code notices: ``torch._dynamo.config.skip_nnmodule_hook_guards`` (True by default in
torch 2.13: no guard on a module's hooks, so a graph traced with or without a hook keeps
running as traced when hooks are added or removed later).

The wrappers record only: the hook is registered and the handle removed as the program asked.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, cast

from pt2doctor.torchcompat.dynamo import skip_code
from pt2doctor.torchcompat.version import supported

HOOK_METHODS = (
    "register_forward_hook",
    "register_forward_pre_hook",
    "register_full_backward_hook",
    "register_full_backward_pre_hook",
    "register_backward_hook",
)
MAX_EVENTS = 200
"""Hook changes recorded (a hook re-attached every batch stays bounded); the rest counted."""
_MARKER = "_pt2doctor_records_hooks"


def record_module_hooks(
    on_event: Callable[[dict[str, Any]], None],
    where: Callable[[], dict[str, Any] | None],
) -> bool:
    """Wrap nn.Module's hook registrations: ``on_event({action: add|remove, method, module,
    file, line, function})`` for each (``where`` gives the user's frame). False when torch is
    unavailable."""
    try:
        import torch
    except ImportError:
        return False
    module = torch.nn.Module
    if getattr(module, _MARKER, False):
        return True
    seen = [0]

    def emit(action: str, method: str, owner: Any) -> None:
        seen[0] += 1
        if seen[0] <= MAX_EVENTS:
            on_event({"action": action, "method": method, "module": type(owner).__name__,
                      "n": seen[0], **(where() or {})})  # fmt: skip

    def wrap(method: str) -> None:
        original = getattr(module, method, None)
        if original is None:
            return

        @functools.wraps(original)
        def registering(self: Any, *args: Any, **kwargs: Any) -> Any:
            if torch.compiler.is_compiling():  # traced by Dynamo: the original alone
                return original(self, *args, **kwargs)
            handle = original(self, *args, **kwargs)
            emit("add", method, self)
            remove = getattr(handle, "remove", None)
            if callable(remove):

                def removing() -> None:
                    remove()
                    emit("remove", method, self)

                skip_code(removing.__code__, recursive=True)
                handle.remove = removing
            return handle

        skip_code(cast(Any, registering).__code__, recursive=True)
        setattr(module, method, registering)

    for method in HOOK_METHODS:
        wrap(method)
    setattr(module, _MARKER, True)
    return True


def hook_guards_skipped() -> bool | None:
    """``torch._dynamo.config.skip_nnmodule_hook_guards`` (None: unavailable on this torch)."""
    try:
        import torch._dynamo.config as config
    except ImportError:
        return None
    value = getattr(config, "skip_nnmodule_hook_guards", None)
    return value if isinstance(value, bool) else None


def hook_guards(skip: bool) -> contextlib.AbstractContextManager[Any]:
    """``torch._dynamo.config.skip_nnmodule_hook_guards = skip`` for a block (``False``:
    Dynamo guards on each module's hooks, and a hook added or removed after compiling makes
    the frame compile again); a no-op where this torch lacks the setting."""
    if not supported() or hook_guards_skipped() is None:
        return contextlib.nullcontext()
    import torch._dynamo.config as config

    patch: contextlib.AbstractContextManager[Any] = config.patch(skip_nnmodule_hook_guards=skip)
    return patch


def on_compile_start(callback: Callable[..., None]) -> bool:
    """``callback(args)`` each time Dynamo starts compiling a frame (its compile callbacks);
    False where this torch has none (then nothing is called). ``torch.compiler.reset()``
    drops every callback: register again after one (registering twice is registering once)."""
    if not supported():
        return False
    try:
        from torch._dynamo.callback import callback_handler
    except ImportError:
        return False
    registered = getattr(callback_handler, "start_callbacks", None)
    register = getattr(callback_handler, "register_start_callback", None)
    if register is None or not isinstance(registered, list):
        return False
    if callback not in registered:
        register(callback)
    return True


MAX_STORES = 200
"""Distinct (module class, attribute, user line) stores recorded; each is recorded once."""
_STORES_MARKER = "_pt2doctor_records_stores"


def record_attribute_stores(
    on_event: Callable[[dict[str, Any]], None],
    where: Callable[[], dict[str, Any] | None],
) -> bool:
    """Wrap ``nn.Module.__setattr__``: ``on_event({module, attr, value_type, file, line,
    function, code})`` the first time the user's code (``where``) stores a plain Python value
    (bool, int, float, str) in a module attribute at a line: who changes a value a compiled
    frame guards (``m.p = p`` in a training loop). False when torch is unavailable."""
    try:
        import torch
    except ImportError:
        return False
    module = torch.nn.Module
    if getattr(module, _STORES_MARKER, False):
        return True
    original = module.__setattr__
    seen: set[tuple[str, str, str, int]] = set()

    compiling = torch.compiler.is_compiling

    @functools.wraps(original)
    def storing(self: Any, name: str, value: Any) -> None:
        # Dynamo inlines a module's __setattr__ when compiled code stores an attribute: it
        # must see the original alone (is_compiling is a constant True while it traces), or
        # this wrapper would be traced, break the graph and add frames of its own.
        if compiling():
            return original(self, name, value)
        original(self, name, value)
        if name.startswith("_") or not isinstance(value, bool | int | float | str):
            return
        frame = where()
        if not frame or len(seen) >= MAX_STORES:
            return
        key = (type(self).__name__, name, str(frame.get("file")), int(frame.get("line") or 0))
        if key in seen:
            return
        seen.add(key)
        import linecache

        code = linecache.getline(str(frame.get("file")), int(frame.get("line") or 0)).strip()
        on_event({"module": key[0], "attr": name, "value_type": type(value).__name__,
                  "code": code[:200], **frame})  # fmt: skip

    # Called by a frame Dynamo resumed after a graph break (an optimizer's step), this frame
    # would be compiled on its own, and recompiled per attribute name: never compiled, it
    # leaves the frames Dynamo compiles as they are without pt2doctor.
    skip_code(cast(Any, storing).__code__, recursive=True)
    module.__setattr__ = storing  # type: ignore[method-assign]
    setattr(module, _STORES_MARKER, True)
    return True
