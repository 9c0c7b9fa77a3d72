"""User side: is a failure the user's own code (a custom op's registration, a compiler pass or
backend, data-dependent guards, RNG or precision by design) rather than a compiler bug?

``diagnose`` (the verdict over what the ablation measured), ``custom_op_verdict``,
``hook_verdict``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.analysis.userside.causes import custom_op_verdict, diagnose, hook_verdict

_HOMES = {
    "custom_op_verdict": "causes",
    "diagnose": "causes",
    "hook_verdict": "causes",
}
__all__ = ["custom_op_verdict", "diagnose", "hook_verdict"]
__getattr__ = lazy_names(__name__, _HOMES)
