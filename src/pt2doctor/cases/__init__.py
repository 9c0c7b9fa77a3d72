"""The public case API shared by ``pt2doctor check`` and ``pt2doctor ablate``: a case is a factory
plus an input matrix (:class:`Case`, :class:`Matrix`), expanded into cells (:class:`Cell`); the
loader, compile variants, and the alignment and accuracy rules live beside it."""

from pt2doctor.cases.case import Built, Case, Cell, Matrix

__all__ = ["Built", "Case", "Cell", "Matrix"]
