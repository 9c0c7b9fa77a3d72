"""Package ``__init__``s that name their public functions without importing them.

A package's names load on first use, so importing one module of a package (``analysis.paths``
for the renderers, ``rundir`` for the child's probes) does not import its siblings: startup is
part of the design (``pt2doctor report --help`` imports no analysis), and the concern packages of
``analysis`` can use each other's modules without an import cycle through their ``__init__``s.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_names(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``homes`` maps each public name to the module
    (relative to the package) that defines it."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{home}"), name)

    return __getattr__
