"""Deprecated alias of :mod:`pt2doctor.cases` (the case API's first name, before 0.1.0 was
released), kept so case files written as ``from pt2doctor.harness import Case`` still load;
new case files import :mod:`pt2doctor.cases`."""

from pt2doctor.cases import Built, Case, Cell, Matrix

__all__ = ["Built", "Case", "Cell", "Matrix"]
