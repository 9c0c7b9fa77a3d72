"""The only package that touches private torch APIs, split by area. Each accessor checks that
what it needs is there and degrades to "unavailable on this torch" (returns False/None)
instead of crashing.

Used inside the *watched* process (``pt2doctor run``'s child, ``watch()``) and by the workers,
never by ``report``, which does not import torch at all: torch is imported inside the
functions, so importing this package costs no torch. The areas: ``version`` (which torch),
``dynamo`` (compile ids, graph and resume hooks, ``torch.compile`` itself), ``guards`` (guard
timing), ``trace_log`` (the structured trace in process), ``dispatch`` (aten and custom-op
recording), ``inductor`` (config, modes, pass hooks, bisector, preload), ``apply`` (a fix applied from
outside the program: ``run --try-fixes``), ``module_hooks`` (hooks added and removed while the
program runs) and ``fingerprint`` (the environment). Callers use ``torchcompat.<name>``; every public name is here.
"""

from __future__ import annotations

from typing import Any

from pt2doctor.torchcompat.apply import (
    apply_fix,
    compiled_calls_without_grad,
    loaders_with_workers,
)
from pt2doctor.torchcompat.digests import digest_compiled_outputs
from pt2doctor.torchcompat.dispatch import (
    TORCH_NAMESPACES,
    describe_callable,
    op_argument_names,
    record_aten_ops,
    record_custom_op_calls,
    recording_custom_op_calls,
)
from pt2doctor.torchcompat.dynamo import (
    MAX_COMPILE_CALLS,
    _graph_hooks,
    _resume_hooks,
    compiled_target,
    current_compile_id,
    enable_dynamo,
    known_backends,
    original_module,
    override_backend,
    record_compile_calls,
    skip_code,
    user_backend,
    wrap_compiled_graphs,
    wrap_resume_functions,
)
from pt2doctor.torchcompat.fingerprint import environment
from pt2doctor.torchcompat.guards import (
    GUARD_TIMING_BATCH,
    GUARD_TIMING_BUDGET_S,
    GUARD_TIMING_CHECKS,
    _guard_hooks,
    time_guards,
)
from pt2doctor.torchcompat.inductor import (
    COMPILER_HOOKS,
    bisect_compiler,
    cache_dir_entries,
    compile_modes,
    compiler_hooks,
    fallback_random,
    inductor_config_patch,
    max_autotune_on,
    preload_compiler,
    uses_cuda_graphs,
    warm_inductor_cpu,
    without_compiler_hooks,
)
from pt2doctor.torchcompat.module_hooks import (
    hook_guards,
    hook_guards_skipped,
    on_compile_start,
    record_attribute_stores,
    record_module_hooks,
)
from pt2doctor.torchcompat.optimizer_trial import try_optimizer_steps
from pt2doctor.torchcompat.paired import pair_compiled_calls
from pt2doctor.torchcompat.trace_log import FUSION_LOGGERS, attach_fusion_log, attach_trace_file
from pt2doctor.torchcompat.version import MIN_TORCH, supported, torch_version

__all__ = [
    "COMPILER_HOOKS",
    "FUSION_LOGGERS",
    "GUARD_TIMING_BATCH",
    "GUARD_TIMING_BUDGET_S",
    "GUARD_TIMING_CHECKS",
    "MAX_COMPILE_CALLS",
    "MIN_TORCH",
    "TORCH_NAMESPACES",
    "apply_fix",
    "attach_fusion_log",
    "attach_trace_file",
    "bisect_compiler",
    "cache_dir_entries",
    "compile_modes",
    "compiled_calls_without_grad",
    "compiled_target",
    "compiler_hooks",
    "current_compile_id",
    "describe_callable",
    "digest_compiled_outputs",
    "enable_dynamo",
    "environment",
    "fallback_random",
    "hook_guards",
    "hook_guards_skipped",
    "inductor_config_patch",
    "known_backends",
    "loaders_with_workers",
    "max_autotune_on",
    "on_compile_start",
    "op_argument_names",
    "original_module",
    "override_backend",
    "pair_compiled_calls",
    "preload_compiler",
    "record_aten_ops",
    "record_attribute_stores",
    "record_compile_calls",
    "record_custom_op_calls",
    "record_module_hooks",
    "recording_custom_op_calls",
    "skip_code",
    "supported",
    "time_guards",
    "torch_version",
    "try_optimizer_steps",
    "unwrap",
    "user_backend",
    "uses_cuda_graphs",
    "warm_inductor_cpu",
    "without_compiler_hooks",
    "wrap_compiled_graphs",
    "wrap_resume_functions",
]


def unwrap(callback: Any) -> None:
    """Stop passing graphs / resume functions / guard timings to ``callback`` (wrappers already
    made stay)."""
    _graph_hooks[:] = [hook for hook in _graph_hooks if hook[0] != callback]
    _resume_hooks[:] = [hook for hook in _resume_hooks if hook[0] != callback]
    _guard_hooks[:] = [hook for hook in _guard_hooks if hook[0] != callback]
