""" "Where the time goes": the profile section of the report (``report["profile"]``) as rows the
terminal, Markdown and HTML renderers share: a stacked bar per region, the top kernels with
their user lines, the time outside the regions by break site, and the trace's path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pt2doctor.analysis.text import counted
from pt2doctor.report.format import cut, file_name
from pt2doctor.report.sections import Section

Report = Mapping[str, Any]
PARTS = (
    ("kernels_ms", "generated", "#"),
    ("library_ms", "library", "="),
    ("fallback_ms", "fallback", "!"),
    ("overhead_ms", "overhead", "."),
)
"""A region's parts: field, label, the character its share of a text bar is drawn with."""
LEGEND = "bar: # generated  = library  ! fallback  . overhead"
TOP_KERNELS = 8
TOP_REGIONS = 8


def ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "-"


def text_bar(region: Mapping[str, Any], width: int = 20) -> str:
    """The region's parts as ``width`` characters (largest remainder, so they fill it)."""
    total = region["ms_per_call"]
    if total <= 0:
        return " " * width
    shares = [max(region[field], 0.0) / total * width for field, _, _ in PARTS]
    counts = [int(share) for share in shares]
    order = sorted(range(len(shares)), key=lambda i: counts[i] - shares[i])
    for i in order[: width - sum(counts)]:
        counts[i] += 1
    return "".join(char * n for (_, _, char), n in zip(PARTS, counts, strict=True))


def region_label(region: Mapping[str, Any]) -> str:
    name = region.get("display_name")
    label = f"{region['compile_id']} {name}" if name else str(region["compile_id"])
    return f"{label} (backward)" if region.get("part") == "backward" else label


def line_where(line: Mapping[str, Any] | None) -> str:
    if not line:
        return ""
    return f"{file_name(str(line['file']))}:{line['line']}"


def kernel_where(kernel: Mapping[str, Any]) -> str:
    """The kernel's first user line with its code (``mlp.py:10 h = self.fc1(x)``)."""
    lines = kernel.get("user_lines") or []
    if not lines:
        return ""
    first = lines[0]
    more = f" (+{counted(len(lines) - 1, 'line')})" if len(lines) > 1 else ""
    return f"{line_where(first)} {cut(first.get('code') or '', 60)}{more}".strip()


def outside_rows(profile: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(where, ms per call) outside the regions: each break site, then the rest."""
    rows = []
    for item in profile.get("outside", []):
        site = item.get("site")
        if site:
            rows.append((f"graph break at {line_where(site)}", item["ms_per_call"]))
        else:
            rows.append(("the program's own code between regions", item["ms_per_call"]))
    return rows


EAGER_LINES_SHOWN = 5
EAGER_LINES_LABEL = "eager ops by the line that ran them (stack samples)"


def eager_line_rows(profile: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(``file.py:27 in top_p``, ms per call) of the user's lines that ran the window's eager
    ops (``run --profile-stacks``), the most first; [] without the flag."""
    return [
        (f"{file_name(line['file'])}:{line['line']} in {line['function']}", line["ms_per_call"])
        for line in profile.get("eager_lines", [])[:EAGER_LINES_SHOWN]
    ]


PAIRED_LABEL = "without the profiler, paired with eager"


def paired_rows(profile: Mapping[str, Any]) -> list[str]:
    """``GPT2LMHeadModel (gpt2_infer.py:8): compiled 1.471 ms, eager 2.576 ms per call (1.75x
    faster compiled, 5 pairs)``: each compiled callable's paired calls, which ran outside the
    window without the profiler (the window's own times are lengthened by it)."""
    rows = []
    for item in profile.get("paired", []):
        if item.get("compiled_ms") is None or item.get("eager_ms") is None:
            continue
        speedup = item.get("speedup")
        ratio = ""
        if item.get("verdict") == "cannot tell":
            # the pairs do not agree on a side: no ratio of medians is shown as a result
            slower = item.get("slower_pairs")
            ratio = ("cannot tell which is faster" + (f", slower compiled in {slower} of the "
                     f"pairs" if isinstance(slower, int) else ""))  # fmt: skip
        elif speedup:
            ratio = (f"{speedup:.2f}x faster compiled" if speedup >= 1
                     else f"{1 / speedup:.2f}x slower compiled")  # fmt: skip
        noisy = ", noisy" if item.get("noisy") else ""
        rows.append(
            f"{item.get('name')} ({file_name(str(item.get('file')))}:{item.get('line')}): "
            f"compiled {ms(item['compiled_ms'])}, eager {ms(item['eager_ms'])} per call "
            f"({', '.join(part for part in (ratio, counted(int(item.get('pairs') or 0), 'pair')) if part)}{noisy})"
        )
    return rows


def summary_line(profile: Mapping[str, Any]) -> str:
    window = profile["window"]
    share = profile.get("compiled_share")
    compiled = "-" if share is None else f"{100 * share:.0f}%"
    return (
        f"{ms(window['ms_per_call'])} per call of the hot loop ({window['calls']} calls of "
        f"{window['hot_compile_id']} profiled); {compiled} inside compiled regions"
    )


def profile_section(report: Report) -> Section | None:
    """The HTML section (None: the run was not profiled)."""
    profile = report.get("profile")
    if not profile:
        return None
    if not profile.get("available"):
        data: dict[str, Any] = {"error": profile.get("error"), "trace": profile.get("trace_file")}
        return Section("time", "Where the time goes", "profile", data)
    wall = profile["window"]["ms_per_call"]
    regions = []
    for region in profile["regions"][:TOP_REGIONS]:
        total = region["ms_per_call"]
        regions.append(
            {
                "label": region_label(region),
                "ms": ms(total),
                "share": pct(total, wall),
                "parts": [
                    {
                        "kind": label,
                        "width": round(100 * max(region[field], 0.0) / total, 2) if total else 0,
                        "text": f"{label} {ms(region[field])} ({pct(region[field], total)})",
                    }
                    for field, label, _ in PARTS
                    if region[field] > 0.0005 * max(total, 1e-9)  # a part that shows
                ],
            }
        )
    kernels = [
        {
            "name": kernel["name"],
            "kind": kernel["kind"],
            "where": f"{kernel['compile_id']}"
            + (" backward" if kernel.get("part") == "backward" else ""),
            "ms": ms(kernel["ms_per_call"]),
            "share": pct(kernel["ms_per_call"], wall),
            "lines": [
                {"where": line_where(u), "path": u["file"], "code": cut(u.get("code") or "", 120)}
                for u in kernel.get("user_lines", [])
            ],
        }
        for kernel in profile["kernels"][:30]
    ]
    data = {
        "error": None,
        "summary": summary_line(profile),
        "regions": regions,
        "kernels": kernels,
        "outside": [
            {"where": where, "ms": ms(value), "share": pct(value, wall)}
            for where, value in outside_rows(profile)
        ],
        "eager_ops": [
            {"name": op["name"], "ms": ms(op["ms_per_call"])} for op in profile.get("eager_ops", [])
        ],
        "eager_lines": [
            {"where": where, "ms": ms(value)} for where, value in eager_line_rows(profile)
        ],
        "eager_lines_label": EAGER_LINES_LABEL,
        "paired": paired_rows(profile),
        "paired_label": PAIRED_LABEL,
        "trace": profile.get("trace_file"),
        "notes": profile.get("notes", []),
    }
    return Section("time", "Where the time goes", "profile", data)
