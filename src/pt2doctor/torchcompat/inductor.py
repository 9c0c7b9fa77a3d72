"""Inductor: compile modes, config patches (``fallback_random``, pass hooks off), the pass
hooks the program set, the compiler bisector, and the fork server's preload and CPU probe."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from pt2doctor.torchcompat.dispatch import describe_callable
from pt2doctor.torchcompat.version import ignore_error, torch_version


def fallback_random() -> contextlib.AbstractContextManager[Any]:
    """Inductor's ``fallback_random`` on (random ops use eager's RNG, so dropout masks match
    eager's under the same seed); a no-op where the config does not exist."""
    try:
        from torch._inductor import config
    except ImportError:
        return contextlib.nullcontext()
    if not hasattr(config, "fallback_random"):
        return contextlib.nullcontext()
    patch: contextlib.AbstractContextManager[Any] = config.patch(fallback_random=True)
    return patch


def compile_modes() -> dict[str, dict[str, Any]] | None:
    """Inductor's compile modes and the options each sets (``list_mode_options``), or None."""
    try:
        from torch._inductor import list_mode_options
    except ImportError:
        return None
    modes: dict[str, dict[str, Any]] = {}
    for mode in ("default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"):
        modes[mode] = dict(list_mode_options(mode))
    try:
        every = list_mode_options()
    except TypeError:
        every = {}
    for mode, options in dict(every).items():
        modes.setdefault(str(mode), dict(options))
    return modes


def uses_cuda_graphs(options: dict[str, Any]) -> bool:
    return bool(options.get("triton.cudagraphs"))


def bisect_compiler(passes: Callable[[], bool]) -> dict[str, Any]:
    """Run torch's ``compiler_bisector`` in process: it reruns ``passes`` (True: no failure;
    it must compile with ``backend="inductor"``, which the bisector overrides) with backends,
    then Inductor subsystems switched off, bisecting a subsystem's applications when it can.
    Returns ``{available, backend, subsystem, bisect_number, debug_info}``."""
    version = torch_version()
    try:
        from torch._inductor.compiler_bisector import CompilerBisector
    except ImportError:
        return {"available": False, "reason": "torch._inductor.compiler_bisector is missing"}
    if version is None or version < (2, 6) or not hasattr(CompilerBisector, "do_bisect"):
        return {"available": False, "reason": "unavailable on this torch"}
    result = CompilerBisector.do_bisect(passes, cli_interface=False)
    if result is None:
        return {"available": True, "backend": None, "subsystem": None, "bisect_number": None}
    return {
        "available": True,
        "backend": result.backend,
        "subsystem": result.subsystem,
        "bisect_number": result.bisect_number,
        "debug_info": result.debug_info,
    }


# Inductor's config entries that run user code during compilation (pass hooks).
COMPILER_HOOKS = (
    "pre_grad_custom_pass",
    "joint_custom_pre_pass",
    "joint_custom_post_pass",
    "post_grad_custom_pre_pass",
    "post_grad_custom_post_pass",
    "_pre_fusion_custom_pass",
    "_post_fusion_custom_pass",
    "custom_partitioner_fn",
)


def compiler_hooks(with_callable: bool = False) -> list[dict[str, Any]]:
    """Every Inductor pass hook the program set (``post_grad_custom_post_pass``...), each
    ``{hook, function, file, line}`` (and ``callable``, the hook itself, when asked: a
    repro sets it again); [] where the config is not importable."""
    try:
        from torch._inductor import config
    except ImportError:
        return []
    found = []
    for hook in COMPILER_HOOKS:
        value = getattr(config, hook, None)
        if value is not None and callable(value):
            found.append({"hook": hook, **describe_callable(value)})
            if with_callable:
                found[-1]["callable"] = value
    return found


def max_autotune_on() -> bool:
    """Whether Inductor's ``max_autotune`` (or its GEMM variant) is on."""
    try:
        from torch._inductor import config
    except ImportError:
        return False
    return bool(
        getattr(config, "max_autotune", False) or getattr(config, "max_autotune_gemm", False)
    )


def inductor_config_patch(**values: Any) -> contextlib.AbstractContextManager[Any]:
    """Inductor config entries set for a block (``fallback_random``, ``emulate_precision_casts``,
    a pass hook to None); entries this torch does not have are left out."""
    try:
        from torch._inductor import config
    except ImportError:
        return contextlib.nullcontext()
    known = {name: value for name, value in values.items() if hasattr(config, name)}
    if not known:
        return contextlib.nullcontext()
    patch: contextlib.AbstractContextManager[Any] = config.patch(known)
    return patch


@contextlib.contextmanager
def provenance_compile() -> Any:
    """Compiles made in the block keep Inductor's provenance (each kernel -> the post-grad
    nodes and the user's lines: ``trace.provenance_tracking_level``, torch >= 2.8) and run
    its code generation afresh: the FX graph and AOTAutograd caches off, whose hit would
    replay an earlier compile's trace. Yields whether provenance is available here."""
    version = torch_version()
    try:
        from torch._functorch import config as functorch_config
        from torch._inductor import config
    except ImportError:
        yield False
        return
    tracked = version is not None and version >= (2, 8) and hasattr(config, "trace")
    values: dict[str, Any] = {"fx_graph_cache": False}
    if tracked:
        values["trace.provenance_tracking_level"] = 1
    caches = (
        {"enable_autograd_cache": False}
        if hasattr(functorch_config, "enable_autograd_cache")
        else {}
    )
    with inductor_config_patch(**values), functorch_config.patch(caches):
        yield tracked


def without_compiler_hooks() -> contextlib.AbstractContextManager[Any]:
    """Every pass hook the program set, switched off for a block."""
    return inductor_config_patch(**{hook["hook"]: None for hook in compiler_hooks()})


def warm_inductor_cpu() -> None:
    """Inductor's probe of the CPU's vector instruction sets (``valid_vec_isa_list``: a C++
    build and a fresh Python per instruction set, ~2.6 s on 2 cores, cached for the process):
    done once in the fork server, its forked workers skip it. Absent before torch 2.4."""
    try:
        from torch._inductor import cpu_vec_isa
    except ImportError:
        return
    probe = getattr(cpu_vec_isa, "valid_vec_isa_list", None)
    if probe is not None:
        try:
            probe()
        except Exception as error:  # a worker then probes for itself
            ignore_error("probing the CPU's vector instruction sets", error)


def preload_compiler() -> None:
    """Import torch, Dynamo and Inductor's compile entry point (the fork server's preload);
    what a version lacks is skipped."""
    import torch  # noqa: F401

    for name in ("torch._dynamo", "torch._inductor.compile_fx"):
        try:
            __import__(name)
        except Exception as error:
            ignore_error(f"preloading {name}", error)


CACHE_SUBDIRS = {"fx_graph": "fxgraph", "aotautograd": "aotautograd"}
"""Where Inductor's on-disk caches keep their entries under its cache dir (torch 2.6-2.13,
torch/_inductor/codecache.py FxGraphCache._get_tmp_dir and autograd_cache.py)."""
MAX_COUNTED = 10_000


def cache_dir_entries() -> dict[str, Any] | None:
    """Inductor's cache dir and how many entries its FX graph and AOTAutograd caches hold
    (``{"dir", "fx_graph", "aotautograd"}``), counted without reading them (at most
    MAX_COUNTED each); None when this torch has no such cache dir."""
    import os

    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir
    except ImportError:  # torch < 2.6 kept it in torch._inductor.utils
        return None
    try:
        root = cache_dir()
    except Exception:
        return None
    found: dict[str, Any] = {"dir": root}
    for cache, folder in CACHE_SUBDIRS.items():
        count = 0
        with contextlib.suppress(OSError):
            # fxgraph/<2 chars>/<key>/<entry>; aotautograd/<key>/<entry>
            path = os.path.join(root, folder)
            for first in os.scandir(path):
                if not first.is_dir() or count >= MAX_COUNTED:
                    continue
                inner = os.scandir(first.path) if cache == "fx_graph" else [first]
                count += sum(1 for entry in inner if entry.is_dir())
        found[cache] = min(count, MAX_COUNTED)
    return found
