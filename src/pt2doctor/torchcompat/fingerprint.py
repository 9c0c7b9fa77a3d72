"""The environment fingerprint: python, torch, CUDA, Triton, GPU, and the compile config the
program or the environment changed (torch's private ConfigModule layout)."""

from __future__ import annotations

import warnings
from typing import Any

from pt2doctor.torchcompat.inductor import compiler_hooks


def _shown(value: Any) -> str:
    """A config value as the report shows it: its repr, except a function (a pass hook), which
    is named with where it is defined instead of its memory address (``<function my_pass
    (passes.py:12)>``: the same in every process)."""
    import inspect
    import os

    if inspect.isfunction(value) or inspect.ismethod(value):
        code = getattr(value, "__code__", None)
        where = f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno})" if code else ""
        return f"<function {getattr(value, '__qualname__', '?')}{where}>"
    return repr(value)


def _config_changes(module: Any) -> dict[str, Any]:
    """Config values the program or the environment set (private ConfigModule layout):
    entries with a user override or a forcing environment variable; aliases and deprecated
    entries are left out (they mirror another entry)."""
    entries = getattr(module, "_config", None)
    try:
        from torch.utils._config_module import _UNSET_SENTINEL as unset
    except ImportError:
        return {}
    if not isinstance(entries, dict):
        return {}
    changed = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated configs warn when read
        for name, entry in entries.items():
            if getattr(entry, "alias", None) or getattr(entry, "deprecated", False):
                continue
            try:
                override = entry.user_override.get()
                forced = getattr(entry, "env_value_force", unset)
                value = getattr(module, name)
                # Mutable defaults are copied into the override on first read: compare too.
                if (override is not unset or forced is not unset) and value != entry.default:
                    changed[name] = _shown(value)
            except Exception:  # a config whose getter fails is not worth crashing the program
                continue
    return changed


def environment() -> dict[str, Any]:
    """Environment fingerprint: python, torch, CUDA, Triton, GPU, changed compile config."""
    import platform

    info: dict[str, Any] = {"python_version": platform.python_version()}
    try:
        import torch
    except ImportError:
        return info
    info["torch_version"] = torch.__version__
    info["cuda_version"] = torch.version.cuda
    info["cuda_available"] = torch.cuda.is_available()
    initialized = torch.cuda.is_initialized()  # type: ignore[no-untyped-call]
    if info["cuda_available"] and initialized:  # never initialize CUDA ourselves
        info["gpu"] = torch.cuda.get_device_name(torch.cuda.current_device())
    try:
        import triton  # type: ignore[import-not-found]

        info["triton_version"] = triton.__version__
    except ImportError:
        info["triton_version"] = None
    config: dict[str, Any] = {}
    for label, module_name in (
        ("dynamo", "torch._dynamo.config"),
        ("inductor", "torch._inductor.config"),
    ):
        try:
            module = __import__(module_name, fromlist=["_config"])
        except ImportError:
            continue
        changes = _config_changes(module)
        if changes:
            config[label] = changes
    info["config_changes"] = config
    info["compiler_hooks"] = compiler_hooks()
    return info
