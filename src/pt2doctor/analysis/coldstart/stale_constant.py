"""A compile served from the compile cache without a guard its graph needs: the cached code
holds a constant another value of the program's needs (``stale_cache_constant``).

Where the compiled code needs a plain number (``x.add_(y, alpha=1 - decay)``), Inductor makes
an expression of a dynamic Python number a constant again and guards on its value: compile
6/1 of a frame serves ``1.0 + ((-1)*decay) == 0.0039938`` only. When that guard fails, Dynamo
traces the same graph again (``decay`` still dynamic), and the FX graph / AOTAutograd cache
hands back the code compiled for 6/1, constant included, without the guard: in torch 2.13 the
later variant serves every new value with the old constant, silently (a blind program's EMA
update drifted to a target-parameter sum of 281.28 against eager's 261.34; with the two caches
off, 261.33). The evidence is the trace's own: an earlier variant of the frame guards the
expression's value, a later one that the cache served does not.
"""

from __future__ import annotations

import re

from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.findings.trace_findings import compile_subject, frame_where
from pt2doctor.analysis.recompiles.ledger import FrameEntry, Ledger
from pt2doctor.analysis.recompiles.outlook import FrameExplanation, VariantRow
from pt2doctor.analysis.recompiles.value_fixes import number_keyword_rewrite
from pt2doctor.analysis.text import counted
from pt2doctor.trace.messages import is_user_file

_CACHES = ("fx_graph", "aotautograd")
_CACHE_NAMES = {"fx_graph": "FX graph", "aotautograd": "AOTAutograd"}


def _mentions(expression: str, source: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(source)}(?![\w(])", expression) is not None


def _lost(earlier: VariantRow, later: VariantRow) -> list[tuple[str, str, str]]:
    """(expression, its value in ``earlier``, the dynamic source it is made of) for each
    expression ``earlier`` guards to a value that ``later``, with that source still dynamic,
    does not guard at all."""
    lost = []
    for expression, value in earlier.serves.items():
        if value == "dynamic" or expression in later.serves:
            continue
        base = next((s for s in later.dynamic if s != expression and _mentions(expression, s)),
                    None)  # fmt: skip
        if base is not None:
            lost.append((expression, value, base))
    return lost


_LOCAL = re.compile(r"\bL\['(\w+)'\]")


def _guarded(frame: FrameEntry, compile_id: str, expression: str) -> bool:
    """Whether compile ``compile_id`` guards ``expression`` in any form (``((1 + L['step'])
    % 2) != 0`` guards ``(1 + step) % 2``: the variant serves the other side of a branch, and
    its table shows no value for it)."""
    # The expression compared by value (== or !=, the two sides of a branch): an inequality
    # (``1 - decay > 0``) does not pin the value the cached code computes with.
    wanted = re.compile(re.escape(expression.replace(" ", "")) + r"\)*(?:==|!=)")
    for entry in frame.compiles:
        if entry.compile_id == compile_id:
            codes = (_LOCAL.sub(r"\1", guard.code or "").replace(" ", "")
                     for guard in entry.record.guards or [])  # fmt: skip
            return any(wanted.search(code) for code in codes)
    return False


def _finding(
    frame: FrameEntry, explanation: FrameExplanation, earlier: VariantRow, later: VariantRow,
    lost: tuple[str, str, str], caches: list[str],
) -> Finding:  # fmt: skip
    expression, value, base = lost
    where = frame_where(frame, explanation.compile_call)
    calls = "" if later.calls is None else f"; it served {counted(later.calls, 'call')}"
    # The user's line that reads the number where the constant is needed: where Dynamo
    # installed the guard on the number itself (the expression's guard is Inductor's).
    line = next((c.installed_at for r in explanation.recompiles for c in r.changes
                 if c.source == base and c.installed_at is not None
                 and c.installed_at.line is not None and is_user_file(c.installed_at.file or "")),
                None)  # fmt: skip
    at = f" (`{line.statement}`, line {line.line})" if line is not None and line.statement else ""
    rewrite = number_keyword_rewrite(line.statement) if line is not None else None
    fix = (
        f"Pass {base} as a 0-d tensor (`torch.tensor({base})`) and use it in tensor "
        f"arithmetic where the code needs a plain number{at}"
        + (f": `{rewrite}`" if rewrite else "")
        + ", so nothing is made a constant (one graph, no guard on its value, no stale code). "
        "Until then, the program computes right with the FX graph and AOTAutograd caches off "
        "(TORCHINDUCTOR_FX_GRAPH_CACHE=0 TORCHINDUCTOR_AUTOGRAD_CACHE=0), at the cost of a "
        "compile per new value up to the recompile limit."
    )
    return Finding(
        "error",
        "stale_cache_constant",
        f"{where}: compile {later.compile_id} came from the compile cache without the guard "
        f"on `{expression}` that compile {earlier.compile_id} needed: the cached code likely "
        f"computes with {expression} = {value} whatever {base} is (wrong results)",
        fix,
        [
            f"{earlier.compile_id}: {base} dynamic, `{expression}` made the constant {value}"
            f"{at}",
            f"{later.compile_id}: {base} dynamic, no guard on `{expression}`; "
            f"{' and '.join(_CACHE_NAMES[cache] for cache in caches)} cache hit{calls}",
        ],
        compile_subject(frame, later.compile_id),
        facts={"expression": expression, "value": value, "source": base,
               "stale_compile": later.compile_id, "constant_compile": earlier.compile_id},
    )  # fmt: skip


def stale_constant_findings(ledger: Ledger, explanations: list[FrameExplanation]) -> list[Finding]:
    """One ``stale_cache_constant`` finding per frame and expression whose guard a later,
    cache-served variant dropped."""
    findings = []
    for frame, explanation in zip(ledger.frames, explanations, strict=True):
        hits = {entry.compile_id: [cache for cache in _CACHES
                                   if entry.record.cache.get(cache) == "hit"]
                for entry in frame.compiles}  # fmt: skip
        seen: set[str] = set()
        rows = explanation.variants
        for index, earlier in enumerate(rows):
            for later in rows[index + 1 :]:
                if not hits.get(later.compile_id):
                    continue
                for lost in _lost(earlier, later):
                    if lost[0] not in seen and not _guarded(frame, later.compile_id, lost[0]):
                        seen.add(lost[0])
                        findings.append(_finding(frame, explanation, earlier, later, lost,
                                                 hits[later.compile_id]))  # fmt: skip
    return findings
