"""Report building (schema) and renderers, one module per format.

The names below load :mod:`pt2doctor.report.schema` (and with it every analysis) on first use,
so importing a sibling module (``report.types``, a renderer) does not pay for the analyses:
``pt2doctor report --help`` imports none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pt2doctor._lazy import lazy_names

if TYPE_CHECKING:
    from pt2doctor.report.document import SCHEMA_VERSION, dumps_report
    from pt2doctor.report.schema import build_report

__all__ = ["SCHEMA_VERSION", "build_report", "dumps_report"]
__getattr__ = lazy_names(
    __name__, {"SCHEMA_VERSION": "document", "dumps_report": "document", "build_report": "schema"}
)
