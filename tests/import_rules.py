"""The package's layering as data, and a checker that reads the imports of a source tree.

The shared layers, lowest first: each may import only the layers before it (and the base
modules). No shared layer imports a command package; command packages import what they need.
docs/ARCHITECTURE.md draws the same picture, and tests/unit/test_layout.py holds both to it.
"""

from __future__ import annotations

import ast
from pathlib import Path

# ``pt2doctor/<name>`` (a package or a module), lowest first.
SHARED_LAYERS: tuple[tuple[str, ...], ...] = (
    ("torchcompat",),
    ("trace",),
    ("rundir",),
    ("analysis",),
    ("report",),
    ("workers", "forkserver"),  # the one launcher and its fork server
    ("capture",),
)
COMMAND_PACKAGES = (
    "cases",
    "check",
    "ablate",
    "cli",
    "harness",
    "inprocess",
    "pytest_plugin",
    "tries",  # run --try-fixes: re-runs through capture, judged by the report
)
# Importable from anywhere: the package root (``__version__``), errors and the lazy-name helper.
BASE_MODULES = ("errors", "_lazy", "__init__", "__main__")


def imported_modules(path: Path, package_names: set[str]) -> set[str]:
    """Every ``pt2doctor...`` module ``path`` imports, at any depth (lazy imports inside
    functions too); ``from pt2doctor import torchcompat`` counts as ``pt2doctor.torchcompat``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if node.module == "pt2doctor":
                names |= {f"pt2doctor.{a.name}" for a in node.names if a.name in package_names}
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name == "pt2doctor" or name.startswith("pt2doctor.")}


def top_name(module: str) -> str | None:
    """``pt2doctor.analysis.breaks.sites`` -> ``analysis``; the root itself -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def owner_of(path: Path, package: Path) -> str:
    """The top-level name (``analysis``, ``workers``) a source file belongs to."""
    relative = path.relative_to(package)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def layer_rank(name: str) -> int | None:
    for rank, layer in enumerate(SHARED_LAYERS):
        if name in layer:
            return rank
    return None


def violations(package: Path) -> list[str]:
    """``file imports module: why`` for every import that breaks the rules in the tree at
    ``package`` (the ``src/pt2doctor`` folder, or a copy of it)."""
    names = {
        p.stem if p.is_file() else p.name
        for p in package.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    found = []
    for path in sorted(package.rglob("*.py")):
        owner = owner_of(path, package)
        rank = layer_rank(owner)
        if rank is None:
            continue  # a command package or a base module: it may import any layer
        for module in sorted(imported_modules(path, names)):
            target = top_name(module)
            if target is None or target == owner or target in BASE_MODULES:
                continue
            where = f"{path.relative_to(package)} imports {module}"
            if target in COMMAND_PACKAGES:
                found.append(f"{where}: a shared layer imports a command package")
            elif (target_rank := layer_rank(target)) is not None and target_rank > rank:
                found.append(f"{where}: {owner} imports upward ({target} is above it)")
    return found


def _module_imports(path: Path, modules: set[str]) -> set[str]:
    """The modules of the tree ``path`` imports, at any depth, except under ``if TYPE_CHECKING:``
    (a name for annotations only: no import at run time, so no cycle)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for sub in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & modules


def module_cycles(package: Path) -> list[list[str]]:
    """Groups of modules that import each other, directly or around a circle (Tarjan's
    strongly connected components of the import graph), in the tree at ``package``."""
    paths = {}
    for path in package.rglob("*.py"):
        parts = ("pt2doctor", *path.relative_to(package).with_suffix("").parts)
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {name: _module_imports(path, set(paths)) - {name} for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for other in graph[name]:
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            group = []
            while stack[-1] != name:
                group.append(stack.pop())
            group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return cycles
