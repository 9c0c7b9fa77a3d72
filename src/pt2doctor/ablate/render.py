"""Renderings of the ablate report: terminal (rich) and Markdown. Both only format the report
dict that ``report.ablate.build_ablate_report`` built."""

from __future__ import annotations

from typing import Any, cast

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pt2doctor.ablate.types import FAILURE_STATUSES, AblateReport, Repro, Rung, Toggle, Verified
from pt2doctor.analysis.paths import shorten_paths
from pt2doctor.cases.numerics_culprit import kernel_lines
from pt2doctor.report.format import md_code, md_table, md_text


def _style(status: str) -> str:
    if status == "ok":
        return "green"
    return "red" if status in FAILURE_STATUSES else "yellow"


def _cell(value: Any) -> str:
    return "-" if value in (None, "") else str(value)


def _module_line(report: AblateReport) -> str | None:
    module = report.get("module")
    if not module:
        return None
    if not module.get("completed"):
        return f"module bisection did not complete: {module.get('detail')}"
    tried = ", ".join(
        f"{t['module']} {'fails' if t['reproduced'] else t['status']}" for t in module["trials"]
    )
    found = module.get("module") or "only the whole model (no submodule alone)"
    return f"smallest failing module: {found}  (tried: {tried or 'no user-defined submodule'})"


def _bisect_line(report: AblateReport) -> str | None:
    found = report.get("bisect")
    if not found:
        return None
    if found.get("available") is False:
        return f"compiler_bisector: {found.get('reason')}"
    if found.get("available") is None:
        return f"compiler_bisector did not finish: {found.get('detail')}"
    if not found.get("backend"):
        return "compiler_bisector: the failure did not reproduce under bisection"
    subsystem = found.get("subsystem") or "no single subsystem (disabling none of them fixed it)"
    number = f", application #{found['bisect_number']}" if found.get("bisect_number") else ""
    info = f" ({found['debug_info']})" if found.get("debug_info") else ""
    return f"compiler_bisector: {found['backend']} / {subsystem}{number}{info}"


_PLACEHOLDERS = {"<n>": "N", "<path>": "PATH", "<addr>": "ADDRESS", "<name>": "NAME"}


def _shown(signature: str | None) -> str:
    """A failure signature as the reader sees it: its masks (numbers, paths, addresses and
    generated names, left out so two runs compare) as words, not ``<n>``."""
    signature = signature or ""
    if signature.strip() == "exit <n>":
        return "a non-zero exit code"
    for mask, word in _PLACEHOLDERS.items():
        signature = signature.replace(mask, word)
    return signature


def _checked(verified: Verified) -> str:
    """Whether the repro failed the same way, both signatures side by side (reports from
    before the signatures say only whether it failed)."""
    run = f"exit {verified['exit_code']}: {verified['output']}"
    if "expected" not in verified:
        return f"{'reproduces' if verified['reproduces'] else 'does NOT reproduce'} ({run})"
    if verified["reproduces"]:
        numbers = f": {verified['output']}" if verified["expected"] == "diverged from eager" else ""
        return f"reproduces the program's failure: {_shown(verified['expected'])} (exit 1{numbers})"
    if verified.get("signature"):
        return (
            f"does NOT reproduce: it fails with {_shown(verified['signature'])}, the program "
            f"failed with {_shown(verified['expected'])}"
        )
    return f"does NOT reproduce ({run}); the program failed with {_shown(verified['expected'])}"


def repro_holds(repro: Repro) -> str:
    """What a written repro holds, in a few words (by how it was made)."""
    source = repro.get("source")
    if source == "fx_graph_runnable":
        return f"torch's runnable graph of compile {repro.get('compile_id')}, as Inductor got it"
    if source == "minifier":
        minifier = repro.get("minifier") or {}
        after = minifier.get("after")
        if minifier.get("minified"):
            return f"the failing graph as torch's minifier shrank it (after {after})"
        return f"the failing graph as torch's minifier dumped it (after {after}, not shrunk)"
    if source == "program":
        return "the program itself, copied beside it"
    if repro.get("module"):
        return f"submodule {repro['module']} ({repro.get('module_class')}) compiled alone"
    return "the whole model compiled"


def minifier_line(minifier: dict[str, Any]) -> str:
    """How torch's minifier went (its launcher, whether it shrank the graph, in how long)."""
    if not minifier.get("launcher"):
        return "no launcher written"
    shrunk = "shrank the graph" if minifier.get("minified") else "did not shrink the graph"
    said = (
        f": {minifier['output']}" if minifier.get("output") and not minifier.get("minified") else ""
    )
    return f"after {minifier.get('after')}, {shrunk} in {minifier.get('seconds')} s{said}"


def _repro_block(repro: Repro, name: str = "repro") -> list[str]:
    if not repro.get("written"):
        return [f"{name} not written: {repro.get('reason')}"]
    size = f"{repro['lines']} lines: " if repro.get("lines") else ""
    lines = [f"{name}: {repro['path']} ({size}{repro_holds(repro)})",
             f"  run it: {repro['command']}"]  # fmt: skip
    verified = repro.get("verified")
    if verified:
        lines.append(f"  checked: {_checked(verified)}")
    for reason in repro.get("not_standalone_because") or []:
        lines.append(f"  not standalone: {reason}")
    return lines


def _repro_lines(report: AblateReport) -> list[str]:
    repro = report.get("repro")
    if not repro:
        return []
    lines = _repro_block(repro)
    minifier = repro.get("minifier")
    if repro.get("source") == "minifier" and minifier:
        lines.append(f"  torch's minifier: {minifier_line(minifier)}")
    elif isinstance(minifier, dict):  # the last rung, after a repro that fell short
        lines += _repro_block(cast(Repro, minifier), "torch's minifier repro")
        if minifier.get("minifier"):
            lines.append(f"  torch's minifier: {minifier_line(minifier['minifier'])}")
    return lines


def _user_side_lines(report: AblateReport) -> list[str]:
    """The user-side proof (what was measured), the custom ops checked, the hooks set."""
    user = report["conclusion"].get("user_side")
    lines = [f"user side ({user['kind']}): {item}" for item in user["evidence"]] if user else []
    for op in report.get("custom_ops") or []:
        if op.get("error"):
            lines.append(f"custom op {op['op']}: opcheck did not run: {op['error']}")
            continue
        failing = [c["name"] for c in op["checks"] if c["passed"] is False]
        result = f"fails {', '.join(failing)}" if failing else "passes"
        lines.append(f"custom op {op['op']} ({', '.join(op['inputs'])}): opcheck {result}")
    for hook in report.get("compiler_hooks") or []:
        where = f"{hook.get('file')}:{hook.get('line')}"
        lines.append(f"compiler hook {hook['hook']} = {hook['function']} ({where})")
    return lines


def diverging_module(numerics: dict[str, Any] | None) -> str | None:
    """The module where the numbers leave eager's: the forward's culprit, else (a training
    cell whose forward matched) the gradients' ("" is the model itself)."""
    found = numerics or {}
    if found.get("diverges"):
        culprit: str | None = found.get("culprit")
        return culprit
    gradients = found.get("gradients") or {}
    return gradients.get("culprit") if gradients.get("diverges") else None


def numerics_rows(report: AblateReport) -> list[dict[str, Any]]:
    """Where the numbers diverge, one row per module on the descent path: module, class,
    whether it introduces the error compiled alone on eager's input, its eager and compiled
    RMSE against fp64 (fed fp64's input), and its output's max abs error against eager in the
    whole compiled run (what it inherited plus what it introduced). For a training cell whose
    forward matched, the gradients' descent: the whole run's error is of the module's own
    parameters' gradients (the model's: the first that fails)."""
    found = report.get("numerics") or {}
    whole = {row["module"]: row for row in found.get("inherited") or []}
    rows = []
    gradients = found.get("gradients") or {}
    path = found.get("path")
    if not found.get("diverges") and gradients.get("diverges"):  # the gradients' descent
        path = gradients.get("path")
        whole = {row["module"]: row for row in gradients.get("modules") or []}
        whole[""] = (path or [{}])[0].get("worst") or {}
    for step in path or []:
        worst = step.get("worst") or {}
        run = whole.get(step["name"]) or (found.get("whole") if not step["name"] else None) or {}
        rows.append({
            "module": step["name"] or "<model>",
            "class": step["kind"],
            "introduces": step["introduces"],
            "source": step.get("source"),
            "alone_error": worst.get("max_abs_error"),
            "inherited_error": 0.0 if not step["name"] else run.get("input_max_abs_error"),
            "eager_rmse": step.get("eager_rmse"),
            "compiled_rmse": step.get("compiled_rmse"),
            "whole_run_error": run.get("max_abs_error"),
        })  # fmt: skip
    return rows


def numerics_lines(report: AblateReport) -> list[str]:
    """The verdict of where the numbers diverge, the knob that cleared it and the repro, as
    plain lines; or why there is none."""
    found = report.get("numerics")
    if not found:
        return []
    if found.get("skipped"):
        return [f"where the numbers diverge: not searched, {found['skipped']}"]
    if not found.get("completed", True):
        return [f"where the numbers diverge: the search did not finish: {found.get('detail')}"]
    searched = found.get("searched") or []
    gradients = found.get("gradients") or {}
    if not found.get("diverges") and gradients.get("diverges"):
        culprit = gradients.get("culprit") or "<model>"
        source = gradients.get("culprit_source")
        where = f" at {shorten_paths(source)}" if source else ""
        how = ": in its own code, between its children" if gradients.get("own_code") else ""
        return [
            "the forward matches eager; the gradients leave eager's, first in backward order "
            f"at {gradients.get('first') or '<model>'}",
            f"gradients diverge in {culprit} ({gradients.get('culprit_kind')}){where}{how}",
        ]  # fmt: skip
    if not found.get("diverges"):
        what = (f"each of the {len(searched)} compiled units searched" if len(searched) > 1
                else "the model")  # fmt: skip
        return [f"where the numbers diverge: compiled again for this search, {what} matched "
                "eager within check's rule, so no module is named"]  # fmt: skip
    culprit = found.get("culprit") or "<model>"
    where = f" at {shorten_paths(found['culprit_source'])}" if found.get("culprit_source") else ""
    lines = [f"numbers diverge in {culprit} ({found.get('culprit_kind')}){where}"]
    if found.get("unit"):
        before = len(searched) - 1
        lines.append(f"in the program's {found['unit']}" + (
            f"; the {before} before it matched eager" if before > 0 else ""))  # fmt: skip
    if found.get("fused") and found.get("fused_pair"):
        lines[0] += (f": only when {' and '.join(found['fused_pair'])} are compiled together "
                     "(fused)")  # fmt: skip
    elif found.get("own_code"):
        lines[0] += ": in its own code, between its children"
    if found.get("cleared_by"):
        lines.append(f"cleared by {found['cleared_by']}: {shorten_paths(found['cleared_because'])}")
    elif found.get("dynamo_only"):
        ops = ", ".join(found.get("custom_ops") or [])
        lines.append(("no knob clears it, and compiled" if found.get("knobs") else "traced")
                     + " by Dynamo alone it still diverges: the traced code differs from eager's "
                     "(an is_compiling() branch, a custom op" + (f": {ops}" if ops else "")
                     + ")")  # fmt: skip
    elif found.get("knobs"):
        lines.append(f"no knob clears it (tried {', '.join(found['knobs'])})")
    if found.get("bisected"):
        lines.append(f"compiler_bisector on the culprit alone: {found['bisected']['meaning']}")
    lines += [f"kernel {shorten_paths(line)}" for line in kernel_lines(found.get("kernels") or [])]
    if found.get("hooks_kept_failure") is False:
        lines.append("with the recording hooks on, the whole model passed: they changed what "
                     "was compiled, so the whole-run columns are of a run that passed; each "
                     "module compiled alone, without hooks, is what names the culprit")  # fmt: skip
    repro = found.get("repro") or {}
    if repro.get("path"):
        lines.append(f"numerics repro: python {repro['path']} ({repro.get('lines')} lines"
                     f"{'' if repro.get('standalone') else ', not standalone'})")  # fmt: skip
    return lines


def _numbers(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}"


def detail_lines(report: AblateReport) -> list[str]:
    """Module, subsystem, user side, workarounds and repro, as plain lines (shared by both
    formats)."""
    lines = [line for line in (_module_line(report), _bisect_line(report)) if line]
    lines += _user_side_lines(report)
    lines += _repro_lines(report)
    return lines


def _table_rows(report: AblateReport) -> list[tuple[str, str | None, str, str | None]]:
    """The ladder's rungs, then the toggles (``toggle NAME``, no layer): name, layer, status,
    and the error numbers or else the error, an installed package's file named by its package
    (as the page shows it, ablate/views.py)."""
    rows: list[tuple[str, str | None, str, str | None]] = [
        (rung["backend"], rung.get("layer"), rung["status"], _said(rung))
        for rung in report["ladder"]
    ]
    rows += [
        (f"toggle {toggle['name']}", None, toggle["status"], _said(toggle))
        for toggle in report["toggles"]
    ]
    return rows


def _said(row: Rung | Toggle) -> str | None:
    text = row.get("numbers") or row.get("error")
    return shorten_paths(text) if text else text


def render_ablate(report: AblateReport, console: Console) -> None:
    table = Table(title="ablation ladder", title_justify="left")
    for column in ("backend", "layer", "result", "error / error numbers"):
        table.add_column(column, overflow="fold")  # a narrow or piped terminal loses nothing
    for name, layer, status, detail in _table_rows(report):
        table.add_row(
            escape(name),
            escape(_cell(layer)),
            f"[{_style(status)}]{escape(status)}[/]",
            escape(_cell(detail)),
        )
    console.print(table)
    verdict = report["conclusion"]
    category = f" [{verdict['category']}]" if verdict.get("category") else ""
    console.print(f"\n[bold]{escape(verdict['sentence'])}[/]{escape(category)}")
    for line in detail_lines(report):
        console.print(escape(line))
    rows = numerics_rows(report)
    if rows:
        table_cells = [numerics_cells(row) for row in rows]
        for cells in table_cells:
            cells[2] = cells[2].rsplit("/", 1)[-1]  # the file's name; report.md has its path
        if console.width < NUMERICS_TABLE_WIDTH:  # a narrow or piped terminal: a row a line
            console.print("where the numbers diverge")
            for cells in table_cells:
                said = ", ".join(f"{name} {value}" for name, value
                                 in zip(NUMERICS_COLUMNS[3:], cells[3:], strict=True))  # fmt: skip
                console.print(escape(f"  {cells[0]} ({cells[1]}, {cells[2]}): {said}"))
        else:
            numbers = Table(title="where the numbers diverge", title_justify="left")
            for column in NUMERICS_COLUMNS:
                numbers.add_column(column, overflow="fold")
            for cells in table_cells:
                numbers.add_row(*(escape(text) for text in cells))
            console.print(numbers)
    for line in numerics_lines(report):
        console.print(escape(line))
    if report["workarounds"]:
        console.print("\n[bold]workarounds[/]")
        for advice in report["workarounds"]:
            console.print(f"  - {escape(advice)}")


def _md_row(name: str, layer: str | None, status: str, detail: str | None) -> list[str]:
    return [md_code(name), md_text(_cell(layer)), md_text(status),
            md_code(detail) if detail else "-"]  # fmt: skip


def _md_trials(report: AblateReport) -> list[str]:
    trials = (report.get("module") or {}).get("trials") or []
    if not trials:
        return []
    rows = [
        [md_code(t["module"]), "yes" if t["reproduced"] else "no", md_text(t["status"])]
        for t in trials
    ]
    return ["## Module bisection", "", *md_table(["submodule alone", "fails", "result"], rows)]


NUMERICS_TABLE_WIDTH = 110
"""Narrower terminals (a pipe's 80 columns) get the numerics rows as lines, not a table whose
eight columns would split every number."""
NUMERICS_COLUMNS = ("module", "class", "file:line", "introduces alone", "inherited",
                    "eager RMSE vs fp64", "compiled RMSE vs fp64", "in the whole run")  # fmt: skip


def numerics_cells(row: dict[str, Any]) -> list[str]:
    introduces = f"yes ({_numbers(row['alone_error'])})" if row["introduces"] else "no"
    source = shorten_paths(row["source"]) if row.get("source") else "-"
    return [row["module"], row["class"], source, introduces,
            _numbers(row.get("inherited_error")), _numbers(row["eager_rmse"]),
            _numbers(row["compiled_rmse"]), _numbers(row["whole_run_error"])]  # fmt: skip


def _md_numerics(report: AblateReport) -> list[str]:
    rows = numerics_rows(report)
    lines = numerics_lines(report)
    if not rows and not lines:
        return []
    table = [[md_code(cells[0]), *(md_text(c) for c in cells[1:])]
             for cells in map(numerics_cells, rows)]  # fmt: skip
    out = ["", "## Where the numbers diverge", ""]
    if table:
        out += md_table(list(NUMERICS_COLUMNS), table)
    return out + [f"- {md_text(line)}" for line in lines]


def _md_environment(report: AblateReport) -> list[str]:
    env = report.get("environment") or {}
    keys = ("torch_version", "python_version", "cuda_version", "triton_version", "gpu")
    parts = [f"{key} {md_code(env[key])}" for key in keys if env.get(key) is not None]
    return ["<sub>" + " · ".join(parts) + "</sub>", ""] if parts else []


def render_ablate_markdown(report: AblateReport) -> str:
    """report.md: GitHub-flavoured Markdown; every user-derived string is escaped (error
    messages and module names come from the user's program), as in report/markdown.py."""
    verdict = report["conclusion"]
    category = f" ({md_text(verdict['category'])})" if verdict.get("category") else ""
    lines = ["# pt2doctor ablate", "", f"**{md_text(verdict['sentence'])}**{category}", ""]
    header = ["backend", "layer", "result", "error / error numbers"]
    lines += md_table(header, [_md_row(*row) for row in _table_rows(report)])
    lines += _md_trials(report)
    lines += [f"- {md_text(line)}" for line in detail_lines(report)]
    lines += _md_numerics(report)
    if report["workarounds"]:
        lines += ["", "## Workarounds", ""]
        lines += [f"{n}. {md_text(advice)}" for n, advice in enumerate(report["workarounds"], 1)]
    lines += ["", *_md_environment(report)]
    return "\n".join(lines).rstrip() + "\n"
