"""The acceptance harness behind ``pt2doctor check``: cases, cells, alignment, benchmarks."""

from pt2doctor.harness.case import Built, Case, Cell, Matrix

__all__ = ["Built", "Case", "Cell", "Matrix"]
