"""Report building (schema) and renderers, one module per format."""

from pt2doctor.report.schema import SCHEMA_VERSION, build_report, dumps_report

__all__ = ["SCHEMA_VERSION", "build_report", "dumps_report"]
