"""Paths a person reads: a library file relative to its site-packages, a user file relative to
the working directory; ``file:line`` first, never cut in the middle.

Pure functions of their arguments (the caller passes the working directory), so reports stay
reproducible: the JSON keeps absolute paths, renderers shorten them for display.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from pt2doctor.trace.patterns import lazy_compile

# Where installed packages live: site-packages (venv, pip) or dist-packages (Debian's python3).
_PACKAGES_DIR = lazy_compile(r"^.*?/(?:site|dist)-packages/")
# The standard library's directory (``/usr/lib/python3.11/``, a pyenv's ``.../lib/python3.11/``).
_STDLIB_DIR = lazy_compile(r"^.*?/lib/python3\.\d+/")
# An absolute path to a Python file inside prose (finding titles, evidence lines).
_ABSOLUTE_PY = lazy_compile(r"(?<![\w./-])/[^\s:()'\"`,]+\.py\b")


def library_path(path: str) -> str | None:
    """``transformers/utils/generic.py`` for a file under site-packages; None otherwise."""
    match = _PACKAGES_DIR.match(path)
    return path[match.end() :] if match else None


def short_library_path(path: str | None) -> str:
    """A library file as its package names it: ``transformers/utils/generic.py`` under
    site-packages, ``logging/__init__.py`` in the standard library; else the path as given."""
    if not path:
        return "?"
    library = library_path(path)
    if library is not None:
        return library
    stdlib = _STDLIB_DIR.match(path)
    return path[stdlib.end() :] if stdlib else path


def display_path(path: str | None, cwd: str | None = None) -> str:
    """A library file relative to site-packages, else relative to ``cwd`` when under it, else
    the path as given."""
    if not path:
        return "?"
    library = library_path(path)
    if library is not None:
        return library
    if cwd and path.startswith("/"):
        try:
            return str(PurePosixPath(path).relative_to(cwd))
        except ValueError:
            return path
    return path


def shorten_paths(text: str, cwd: str | None = None) -> str:
    """``text`` with every absolute ``.py`` path in it shortened by :func:`display_path`."""
    return _ABSOLUTE_PY.sub(lambda match: display_path(match.group(0), cwd), text)
