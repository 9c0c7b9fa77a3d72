"""``--redact``: a report safe to share. Trace logs carry the model's source code and the
machine's paths; a redacted report has no source line and only relative paths.

- every ``code`` of a source location (sites, user stacks, guard sources, failure frames) is
  ``null``, and any other string quoting one of those lines (findings' evidence) has it replaced
  by ``<source redacted>``;
- paths under the run's working directory become relative to it; paths into an installed
  package (``.../site-packages/torch/...``) start at the package; any other absolute path keeps
  its file name only. Applied to every string, so titles and messages are covered too.
- ``redacted: true`` is added at the top level.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from typing import Any

Report = dict[str, Any]
SOURCE_REDACTED = "<source redacted>"
# Quoted source lines at least this long are also cut out of longer text (titles, messages).
MIN_QUOTED = 12
_INSTALL_PREFIX = re.compile(r"(?<![\w.:/-])/(?:[^/\s'\"]+/)*?(?:site-packages|dist-packages)/")
_STDLIB_PREFIX = re.compile(r"(?<![\w.:/-])/(?:[^/\s'\"]+/)*?lib/python3\.\d+/")
_ABSOLUTE = re.compile(r"(?<![\w.:/-])/(?:[^/\s'\"(),:]+/)+([^/\s'\"(),:]+)")
# A code span in advice text: a source line quoted whole, without its comment, or cut with "…".
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _is_location(node: dict[str, Any]) -> bool:
    return "code" in node and "file" in node and "line" in node


def _collect_code(node: Any, found: set[str]) -> None:
    """Every source line quoted in a location dict anywhere in the report."""
    if isinstance(node, dict):
        if _is_location(node) and isinstance(node["code"], str) and node["code"].strip():
            found.add(node["code"].strip())
        for value in node.values():
            _collect_code(value, found)
    elif isinstance(node, list):
        for value in node:
            _collect_code(value, found)


def relative_paths(text: str, base: str) -> str:
    """``text`` with absolute paths made relative (see the module docstring)."""
    base = base.rstrip("/")
    if base:
        text = text.replace(base + "/", "")
    text = _INSTALL_PREFIX.sub("", text)
    text = _STDLIB_PREFIX.sub("", text)
    return _ABSOLUTE.sub(r"\1", text)


class _Redactor:
    def __init__(self, base: str, code: set[str]) -> None:
        self.base = base
        # Longest first, so a line containing a shorter quoted line is replaced whole.
        self.code = sorted(code, key=len, reverse=True)
        self.lines = set(code)

    def text(self, value: str) -> str:
        if value.strip() in self.lines:
            return SOURCE_REDACTED
        for line in self.code:
            # Short lines (``x = f(x)``) are too common to replace inside other text.
            if len(line) >= MIN_QUOTED and line in value:
                value = value.replace(line, SOURCE_REDACTED)
        value = _CODE_SPAN.sub(self._code_span, value)
        return relative_paths(value, self.base)

    def _code_span(self, match: re.Match[str]) -> str:
        """A quoted part of a source line (advice quotes a site's code cut to a width)."""
        quoted = match.group(1).removesuffix("…").strip()
        if len(quoted) >= MIN_QUOTED and any(line.startswith(quoted) for line in self.code):
            return f"`{SOURCE_REDACTED}`"
        return match.group(0)

    def node(self, node: Any) -> Any:
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, list):
            return [self.node(value) for value in node]
        if isinstance(node, dict):
            out = {key: self.node(value) for key, value in node.items()}
            if _is_location(node):
                out["code"] = None
            return out
        return node


def redact_report(report: Mapping[str, Any], base: str | None = None) -> Report:
    """A redacted deep copy of ``report``. ``base``: the directory paths are made relative to
    (default: the run's working directory, else the current one)."""
    run = report.get("run") or {}
    base = base or run.get("cwd") or os.getcwd()
    code: set[str] = set()
    _collect_code(report, code)
    redacted: Report = _Redactor(base, code).node(copy.deepcopy(report))
    if "run" in redacted:
        redacted["run"]["cwd"] = "."
    redacted["redacted"] = True
    return redacted
