"""The building blocks of every report kind's HTML view-model: a :class:`Section` of the page and
the environment rows. The run report's views (report/views.py, report/rank_views.py) and the
check and ablate views import them from here, so no views module imports another's builders."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Section:
    """One part of the page: ``template`` names its block in report.html.j2; ``data`` is what
    that block shows; ``charts`` are chart specs (see report/charts.py) drawn above it."""

    id: str
    title: str
    template: str
    data: dict[str, Any]
    charts: list[dict[str, Any]] = field(default_factory=list)


def environment_rows(
    env: Mapping[str, Any], value: Callable[[Any], Any], config_value: Callable[[Any], Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The fingerprint's entries (unset ones left out) and each changed config entry as
    ``module.name``, sorted by key, values shown through ``value`` and ``config_value``
    (every report kind's environment section)."""
    rows = [
        {"key": key, "value": value(entry)}
        for key, entry in sorted(env.items())
        if key != "config_changes" and entry is not None
    ]
    config = [
        {"key": f"{module}.{name}", "value": config_value(entry)}
        for module, changes in sorted((env.get("config_changes") or {}).items())
        for name, entry in sorted(changes.items())
    ]
    return rows, config
