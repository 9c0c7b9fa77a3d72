"""By design, not a compiler bug: module hooks the user's code registered or removed after the
model was compiled. Dynamo does not guard on module hooks
(``torch._dynamo.config.skip_nnmodule_hook_guards``, True by default), so compiled code keeps
running the hooks it traced: a hook added later never fires compiled, a removed one keeps
firing, and the numbers leave eager's.

Proven, never guessed: the failing rung runs once more with ``skip_nnmodule_hook_guards=False``
(:data:`TOGGLE`, tried only when the rung saw hooks change after a compile: ablate/
hook_changes.py), and the failure is gone. The verdict names each change (which hook, on which
module class, at which user line) and gives both fixes. A pure function, like the proofs of
analysis/userside, which it comes before (report.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pt2doctor.analysis.recompiles.fix_model import HOOK_GUARDS_CONFIG

TOGGLE = "skip_nnmodule_hook_guards=False"
"""The toggle's name in ``toggles[]``: the failing rung with Dynamo guarding on hooks."""
CONFIG = HOOK_GUARDS_CONFIG
KIND = "hook_changed_after_compile"
FIX = (
    "By design, not a compiler bug: compiled code does not see module hooks changed after "
    "compile (Dynamo does not guard on them: torch._dynamo.config.skip_nnmodule_hook_guards "
    "= True, torch's default), so it keeps running the hooks it traced: a hook added later "
    "never fires, a removed one keeps firing. Register the hooks before the first compiled "
    "call and switch what they do with a flag they read (or call torch._dynamo.reset(), or "
    "compile again, after changing them); or set "
    "torch._dynamo.config.skip_nnmodule_hook_guards = False before compiling (each set of "
    "hooks then compiles a variant of its own)."
)
ACTIONS = {"add": "registered", "remove": "removed"}
NUMERICS_SKIPPED = (
    f"module hooks changed after compile explain it (the failing rung matches eager with "
    f"{TOGGLE}): a module compiled alone and called once on eager's recorded input cannot "
    "show a hook that changed between calls"
)
"""Why the search of where the numbers diverge is not run once the toggle proved it."""


def hooks_proven(toggles: Sequence[dict[str, Any]]) -> bool:
    """The failing rung passed with :data:`TOGGLE`."""
    return any(t.get("name") == TOGGLE and t.get("status") == "ok" for t in toggles)


def describe(change: dict[str, Any]) -> str:
    """``register_forward_hook registered on Sequential at train.py:64 (`code`)``."""
    action = ACTIONS.get(str(change.get("action")), str(change.get("action")))
    text = f"{change.get('method')} {action} on {change.get('module')}"
    if change.get("file"):
        text += f" at {os.path.basename(str(change['file']))}:{change.get('line')}"
    if change.get("code"):
        text += f" (`{change['code']}`)"
    count = int(change.get("count") or 1)
    return text + (f", {count} times" if count > 1 else "")


def hook_change_verdict(
    toggles: Sequence[dict[str, Any]], changes: Sequence[dict[str, Any]]
) -> dict[str, Any] | None:
    """The user-side verdict when the failing rung passes with :data:`TOGGLE`; ``changes``
    are the hook changes the rung saw after a compile (hook_changes.py), which name it.
    None: the toggle was not tried, or did not clear the failure."""
    if not hooks_proven(toggles):
        return None
    named = "; ".join(describe(change) for change in changes[:3]) or "not seen by pt2doctor"
    evidence = [f"the failing rung matches eager with {CONFIG} = False (Dynamo then guards "
                "on module hooks and compiles again when they change)"]  # fmt: skip
    evidence += [f"after the first compile: {describe(change)}" for change in changes]
    first = changes[0] if changes else {}
    where = (
        {"where": f"{os.path.basename(str(first['file']))}:{first.get('line')}"}
        if first.get("file")
        else {}
    )
    return {
        "kind": KIND,
        "detail": f"by design: module hooks changed after compile ({named}); compiled code "
        "does not see hooks changed after compile",
        "evidence": evidence,
        **where,
        "changes": list(changes),
        "fix": FIX,
    }
