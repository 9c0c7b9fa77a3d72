"""Report building (schema) and renderers, one module per format.

The names below load :mod:`pt2doctor.report.schema` (and with it every analysis) on first use,
so importing a sibling module (``report.types``, a renderer) does not pay for the analyses:
``pt2doctor report --help`` imports none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pt2doctor.report.schema import SCHEMA_VERSION, build_report, dumps_report

__all__ = ["SCHEMA_VERSION", "build_report", "dumps_report"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pt2doctor.report import schema

        return getattr(schema, name)
    raise AttributeError(f"module 'pt2doctor.report' has no attribute {name!r}")
