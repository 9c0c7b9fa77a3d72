"""The "without user hooks" toggle in script mode: the failing rung run once more with every
Inductor pass hook the program set switched off while each graph compiles.

``install`` is loaded in the child through ``capture.child``'s plugin hook: it compiles every
graph with Inductor under ``torchcompat.without_compiler_hooks()`` (the program sets its hooks
at import time, before any compile; a backward compiled later, outside the block, keeps
them). When the rung then passes, the hooks are the cause (analysis/userside hook_verdict).
"""

from __future__ import annotations

from typing import Any

PLUGIN = "pt2doctor.ablate.script_toggles:install"


def install(recorder: Any) -> None:
    from pt2doctor import torchcompat

    def inductor_without_hooks(gm: Any, example_inputs: Any) -> Any:
        from torch._inductor.compile_fx import compile_fx

        with torchcompat.without_compiler_hooks():
            return compile_fx(gm, example_inputs)

    recorder.event("no_user_hooks", ok=torchcompat.override_backend(inductor_without_hooks))
