"""Errors that carry the process exit code the CLI returns for them."""

from __future__ import annotations


class Pt2DoctorError(Exception):
    """An expected failure: the CLI prints its message on one line and exits with exit_code."""

    exit_code = 1


class UsageError(Pt2DoctorError):
    """Bad input from the user: a missing path, a file that is not a trace log (exit 2)."""

    exit_code = 2
