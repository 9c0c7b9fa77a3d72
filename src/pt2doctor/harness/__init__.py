"""Deprecated alias of :mod:`pt2doctor.cases` (the case API moved there in 0.2), kept for one
release so case files written as ``from pt2doctor.harness import Case`` still load."""

from pt2doctor.cases import Built, Case, Cell, Matrix

__all__ = ["Built", "Case", "Cell", "Matrix"]
