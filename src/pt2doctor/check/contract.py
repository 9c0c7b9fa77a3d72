"""The acceptance contract: budgets a compiled deployment must stay within, each clause judged
against what ``check`` measured (the worst value over every case, group and compile variant).

Budgets come from ``[tool.pt2doctor]`` in pyproject.toml or the top level of pt2doctor.toml::

    cold_start_s = 60              # first call end to end, fresh process, empty compile cache
    cold_start_warm_cache_s = 15   # the same with the persisted cache warm
    peak_memory_mb = 4096          # process peak RSS on CPU, CUDA reserved on GPU
    max_variants_per_frame = 4
    max_graph_breaks = 0           # breaks outside allowed_breaks
    allowed_breaks = [{site = "model.py:42", reason = "logging once per epoch"}]
    recompiles_after_warmup = 0    # the default: warmup must cover every variant
    min_speedup = 1.1              # judged on the lower bound of its 95% interval
    min_speedup_on = "lower_bound" # or "estimate": the point estimate, as before
    alignment = true               # the default: every cell aligned with eager
    top_fix_tried = true           # each group's top fix pt2doctor can apply is tried, and
                                   # none that helps is left unapplied
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from pt2doctor.analysis.text import counted

# key: (type, default). A None default means: no clause unless the budget names it.
BUDGET_KEYS: dict[str, tuple[type, Any]] = {
    "cold_start_s": (float, None),
    "cold_start_warm_cache_s": (float, None),
    "peak_memory_mb": (float, None),
    "max_variants_per_frame": (int, None),
    "max_graph_breaks": (int, None),
    "allowed_breaks": (list, None),
    "recompiles_after_warmup": (int, 0),
    "min_speedup": (float, None),
    "min_speedup_on": (str, "lower_bound"),
    "alignment": (bool, True),
    "top_fix_tried": (bool, None),
}


class BudgetError(ValueError):
    """A budget that cannot be applied (unknown key, wrong type): one line for the user."""


@dataclass(frozen=True, slots=True)
class AllowedBreak:
    site: str  # "file.py:LINE" (file matched by its end) or a function name
    reason: str

    def covers(self, site: dict[str, Any]) -> bool:
        file, line, function = str(site.get("file")), site.get("line"), site.get("function")
        if ":" in self.site:
            want_file, _, want_line = self.site.rpartition(":")
            return file.endswith(want_file) and str(line) == want_line
        return self.site == function


@dataclass(frozen=True, slots=True)
class Budget:
    values: dict[str, Any]
    allowed_breaks: list[AllowedBreak] = field(default_factory=list)
    source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Kept in results.jsonl, so a check directory can be re-judged offline."""
        allowed = [{"site": a.site, "reason": a.reason} for a in self.allowed_breaks]
        return {"values": self.values, "allowed_breaks": allowed, "source": self.source}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Budget:
        allowed = [AllowedBreak(str(a["site"]), str(a["reason"])) for a in data["allowed_breaks"]]
        return cls(dict(data["values"]), allowed, data.get("source"))


def _coerce(key: str, value: Any, kind: type) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise BudgetError(f"budget {key} must be {kind.__name__}, got {value!r}")
    if isinstance(value, (int, float)) and value < 0:
        raise BudgetError(f"budget {key} must not be negative, got {value!r}")
    if key == "min_speedup_on" and value not in SPEEDUP_GATES:
        raise BudgetError(f"budget {key} must be one of {', '.join(SPEEDUP_GATES)}, got {value!r}")
    return value


SPEEDUP_GATES = ("lower_bound", "estimate")
"""What ``min_speedup`` is judged on: the lower bound of the speedup's 95% bootstrap interval
(the default: a speedup the noise cannot explain away), or its point estimate."""


def _allowed(value: list[Any]) -> list[AllowedBreak]:
    allowed = []
    for item in value:
        if not isinstance(item, dict) or set(item) != {"site", "reason"}:
            raise BudgetError("each allowed_breaks entry needs exactly site and reason")
        if not str(item["reason"]).strip():
            raise BudgetError(f"allowed break {item['site']} needs a written reason")
        allowed.append(AllowedBreak(str(item["site"]), str(item["reason"])))
    return allowed


def parse_budget(raw: dict[str, Any], source: str | None = None) -> Budget:
    """Validate a budget table; unknown keys are rejected with the closest known one."""
    values = {key: default for key, (_, default) in BUDGET_KEYS.items()}
    for key, value in raw.items():
        if key not in BUDGET_KEYS:
            near = difflib.get_close_matches(key, BUDGET_KEYS, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            where = f" in {source}" if source else ""
            raise BudgetError(f"unknown budget key {key!r}{where}{hint}")
        values[key] = _coerce(key, value, BUDGET_KEYS[key][0])
    allowed = _allowed(values.pop("allowed_breaks") or [])
    return Budget(values, allowed, source)


@dataclass(frozen=True, slots=True)
class Clause:
    name: str
    measured: Any
    budget: Any
    ok: bool | None  # None: nothing was measured (e.g. cold start skipped)
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "measured": self.measured,
            "budget": self.budget,
            "ok": self.ok,
            "detail": self.detail,
        }


def _limit(
    name: str, measured: float | None, budget: float, detail: str = "", at_least: bool = False
) -> Clause:
    if measured is None:
        return Clause(name, None, budget, None, detail or "not measured")
    ok = measured >= budget if at_least else measured <= budget
    return Clause(name, measured, budget, ok, detail)


def _speedup_clause(budget: Budget, measures: dict[str, Any]) -> Clause:
    """``min_speedup`` on the interval's lower bound (a point estimate above the budget whose
    interval reaches below it is "not established", and fails), or on the estimate."""
    wanted = budget.values["min_speedup"]
    if budget.values["min_speedup_on"] == "estimate":
        value, where = measures.get("min_speedup", (None, ""))
        return _limit("min_speedup", value, wanted, where, True)
    low, where, estimate, high = measures.get("min_speedup_low", (None, "", None, None))
    if low is None:
        return Clause("min_speedup", None, wanted, None, "not measured")
    interval = f"95% interval {low:.2f}-{high:.2f}" if high is not None else f"low {low:.2f}"
    detail = f"{where}: speedup {estimate:.2f}, {interval} (judged on its lower bound)"
    if low < wanted <= (estimate or 0):
        detail = (f"not established: {where}: speedup {estimate:.2f} meets {wanted:g}, but its "
                  f"{interval} reaches below it (re-run quieter or with more iterations, or "
                  'set min_speedup_on = "estimate")')  # fmt: skip
    return Clause("min_speedup", low, wanted, low >= wanted, detail)


def evaluate(budget: Budget, measures: dict[str, Any]) -> list[Clause]:
    """Each clause the budget sets, judged against ``measures`` (see report.check)."""
    clauses = []
    for key in (
        "cold_start_s",
        "cold_start_warm_cache_s",
        "peak_memory_mb",
        "max_variants_per_frame",
        "recompiles_after_warmup",
    ):
        if budget.values[key] is not None:
            value, where = measures.get(key, (None, ""))
            clauses.append(_limit(key, value, budget.values[key], where))
    if budget.values["min_speedup"] is not None:
        clauses.append(_speedup_clause(budget, measures))
    breaks = measures.get("graph_breaks", [])
    unexplained = [
        site for site in breaks if not any(a.covers(site) for a in budget.allowed_breaks)
    ]
    if budget.values["max_graph_breaks"] is not None or budget.allowed_breaks:
        limit = budget.values["max_graph_breaks"] or 0
        detail = ", ".join(f"{s['file']}:{s['line']}" for s in unexplained[:5])
        clauses.append(_limit("max_graph_breaks", len(unexplained), limit, detail))
    ops = measures.get("custom_ops", [])
    if ops:  # only when the models call a custom op
        failing = [f"{op['op']} ({', '.join(op['failing'])})" for op in ops if not op["passed"]]
        clauses.append(
            Clause(
                "custom_ops_opcheck",
                f"{len(failing)} of {counted(len(ops), 'custom op')} failing",
                "every custom op passes opcheck and eager vs compiled",
                not failing,
                ", ".join(failing[:5]),
            )
        )
    if budget.values["top_fix_tried"]:
        clauses.append(_top_fix_clause(measures.get("top_fixes", [])))
    if budget.values["alignment"]:
        failing = measures.get("misaligned_cells", [])
        clauses.append(
            Clause(
                "alignment",
                f"{counted(len(failing), 'cell')} failing",
                "every cell",
                not failing,
                ", ".join(failing[:5]),
            )
        )
    return clauses


def _top_fix_clause(rows: list[dict[str, Any]]) -> Clause:
    """Each group's top fix that pt2doctor can apply (a config value, input marks, a
    torch.compile setting) was tried by check re-running the group with it; the clause fails
    when one could not be tried, or when one helped: a fix proven to help is not applied yet."""
    helped = [r for r in rows if (r.get("tried") or {}).get("verdict") == "helped"]
    untried = [r for r in rows if not (r.get("tried") or {}).get("verdict")]
    if not rows:
        return Clause("top_fix_tried", "no fix to try", "top fix tried, none helps", True)
    parts = [
        f"{r['where']}: {r['tried']['fix']} helped ({r['tried']['summary']}): apply it"
        for r in helped
    ] + [
        f"{r['where']}: {r['fix']} not tried ({(r.get('tried') or {}).get('error') or 'no re-run'})"
        for r in untried
    ]
    measured = f"{counted(len(rows) - len(untried), 'fix')} tried, {len(helped)} helped"
    return Clause("top_fix_tried", measured, "top fix tried, none helps",
                  not helped and not untried, "; ".join(parts[:5]))  # fmt: skip
