"""What changed between two reports (``pt2doctor diff A B``): a pure function of two report
dicts (report.json is the contract, so reports of older pt2doctor versions diff too).

Sites and frames are matched by source location (file name, line, function), never by compile
id (ids depend on compile order) nor by full path (another checkout, machine, ``--redact``). Times have no repeated measurement inside one report, so a time
change counts only beyond a noise floor: more than ``rel`` (relative) *and* more than ``abs_s``
(absolute). Compile times of the same program on the same machine vary by ~10-20 % between
runs (2 CPU cores, torch 2.13), hence the defaults.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pt2doctor.analysis.diff.change import Change, Noise, file_name, not_comparable, time_change

Report = dict[str, Any]
ENV_KEYS = ("torch_version", "torch_commit", "python_version", "triton_version", "cuda_version",
            "gpu", "config_changes")  # fmt: skip


@dataclass
class Diff:
    a: str
    b: str
    changes: list[Change] = field(default_factory=list)

    @property
    def regressions(self) -> list[Change]:
        return [change for change in self.changes if change.regression]

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "changes": [asdict(change) for change in self.changes],
            "regressions": len(self.regressions),
        }


def _site_key(site: dict[str, Any]) -> str:
    return f"{file_name(site.get('file'))}:{site.get('line')} {site.get('function')}"


def _frame_key(frame: dict[str, Any]) -> str:
    return f"{frame['function']} ({file_name(frame['file'])}:{frame['line']})"


def _keyed_frames(report: Report) -> dict[str, dict[str, Any]]:
    """A report's frames by their compile identity: the code (function, file name, line), the
    log it is in (the n-th stream, for several ranks) and, for frames of one code in one log,
    their order. Two frames of one code never share a key, so one is never paired with the
    other's counterpart (A's first with B's second, and the same change found both ways)."""
    streams = {stream: index for index, stream in enumerate(report.get("inputs", {}).get(
        "streams") or [])}  # fmt: skip
    keyed: dict[str, dict[str, Any]] = {}
    for frame in report["frames"]:
        key = _frame_key(frame)
        if len(streams) > 1:
            key += f" [log {streams.get(frame.get('stream'), '?')}]"
        repeat, unique = 1, key
        while unique in keyed:
            repeat += 1
            unique = f"{key} #{repeat}"
        keyed[unique] = frame
    return keyed


_RESUME_LINE = re.compile(r"_at_\d+$")
_RESUME_PREFIX = "torch_dynamo_resume_in_"


def _site_identity(site: dict[str, Any]) -> tuple[str, str, str]:
    """A site without its line: file name, function, code (an edit above it moves the line)."""
    return (file_name(site.get("file")), str(site.get("function")), str(site.get("code") or ""))


def _frame_identity(frame: dict[str, Any]) -> tuple[str, str]:
    """A frame without its line: file name, function (a resume's ``_at_<line>`` dropped)."""
    return (file_name(frame.get("file")), _RESUME_LINE.sub("", str(frame.get("function"))))


def _matched(
    before: dict[str, dict[str, Any]],
    after: dict[str, dict[str, Any]],
    identity: Callable[[dict[str, Any]], Any],
) -> dict[str, str]:
    """after key -> before key: the same key with the same identity, else the unmatched entries with the same
    identity (the code moved, e.g. lines added above it), in order, when each side has as
    many of them (one and one; two resume frames of one break and two)."""
    # The same key is the same entry only when it is the same code (a line deleted above
    # moves another site onto this line).
    pairs = {key: key for key in after
             if key in before and identity(before[key]) == identity(after[key])}  # fmt: skip
    left = [key for key in before if key not in pairs.values()]
    for key in (key for key in after if key not in pairs):
        same = [old for old in left if identity(before[old]) == identity(after[key])]
        rivals = [
            new
            for new in after
            if new not in pairs and identity(after[new]) == identity(after[key])
        ]
        if same and len(same) == len(rivals):
            pairs[key] = same[0]
            left.remove(same[0])
    return pairs


def _break_changes(a: Report, b: Report) -> list[Change]:
    before = {_site_key(row["site"]): row for row in a["graph_breaks"]}
    after = {_site_key(row["site"]): row for row in b["graph_breaks"]}
    pairs = _matched(before, after, lambda row: _site_identity(row["site"]))
    changes = [
        Change("new_break_site", key, None, after[key]["category"], True, after[key]["gb_type"])
        for key in after
        if key not in pairs
    ]
    changes += [
        Change("removed_break_site", key, before[key]["category"], None, False)
        for key in before
        if key not in pairs.values()
    ]
    return changes


def _causes(frame: dict[str, Any]) -> set[str]:
    """The recompile causes of a frame. A stride that changed with its tensor's size (a
    contiguous tensor of a new length) is that size change, not a cause of its own (failed
    guards name their ``tensor`` and ``field`` since 2026-12-02)."""
    causes = set()
    for recompile in frame["recompiles"]:
        guards = recompile["failed_guards"]
        sized = {g.get("tensor") for g in guards if g.get("field") == "size"} - {None}
        for guard in guards:
            if guard["category"] == "stride" and guard.get("tensor") in sized:
                continue
            causes.add(guard["category"])
    return causes


def _frame_compile_s(report: Report, frame: dict[str, Any]) -> float:
    ids = set(frame["compile_ids"])
    return sum(
        c["compile_time_s"] or 0.0
        for c in report["compiles"]
        if c["compile_id"] in ids and c["stream"] == frame["stream"]
    )


def _bounded(frame: dict[str, Any] | None) -> str:
    bounded = (frame or {}).get("outlook", {}).get("bounded")
    return {True: "bounded", False: "unbounded"}.get(bounded, "bound unknown")


def _set(causes: set[str]) -> str:
    return "{" + ", ".join(sorted(causes)) + "}"


def _frame_line(
    a: Report,
    b: Report,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    causes: tuple[set[str], set[str]],
) -> str:
    """``variants 5 → 2; causes {size} → {python_constant}; compile time 77 s → 12 s;
    bounded → bounded``: one frame's recompile story, before and after (``causes``: the
    frame's in A and in B)."""
    before_s = 0.0 if old is None else _frame_compile_s(a, old)
    return (
        f"variants {0 if old is None else old['variants']} → {new['variants']}; "
        f"causes {_set(causes[0])} → {_set(causes[1])}; "
        f"compile time {before_s:.3g} s → {_frame_compile_s(b, new):.3g} s; "
        f"{_bounded(old)} → {_bounded(new)}"
    )


def _frame_changes(a: Report, b: Report) -> list[Change]:
    """One ``frame`` change per frame whose variants or recompile causes differ."""
    before, after = _keyed_frames(a), _keyed_frames(b)
    pairs = _matched(before, after, _frame_identity)
    # Recompile causes of A's frames that are gone in B: when a graph break is fixed, the
    # frames it made (the callees Dynamo compiled on their own) join their caller's frame, and
    # their causes move with them; a cause that moved is not a new one.
    gone = [before[key] for key in before if key not in pairs.values()]
    moved = {cause for frame in gone for cause in _causes(frame)}
    changes = []
    for key, frame in after.items():
        old = before.get(pairs.get(key, key))
        old_variants = 0 if old is None else old["variants"]
        old_causes = set() if old is None else _causes(old)
        causes = _causes(frame)
        variants_differ = frame["variants"] != old_variants and (
            old is not None or frame["variants"] > 1
        )
        limits = (bool(old and old.get("limit_hit")), bool(frame.get("limit_hit")))
        if not variants_differ and causes == old_causes and limits[0] == limits[1]:
            continue
        worse = _frame_worse(old, frame, limits, (old_causes - causes, causes - old_causes - moved))
        line = _frame_line(a, b, old, frame, (old_causes, causes))
        came = (causes - old_causes) & moved
        if came and old is not None:
            line += f"; {_set(came)} were causes of frames that are gone in B"
        if limits == (True, False):
            line += (
                "; limit hit → not hit: A ran new inputs eagerly past the limit, B compiles them"
            )
        elif limits == (False, True):
            line += "; limit not hit → hit: B runs new inputs eagerly past the limit"
        subject = _display_key(frame) + key[len(_frame_key(frame)) :]  # its log, its order
        changes.append(Change("frame", subject, old_variants, frame["variants"], worse, line))
    # A's frames with no counterpart in B that recompiled or hit the limit: gone (B → A names
    # them as new, so A → B says they are gone, never as a regression).
    for key in before:
        old = before[key]
        if key in pairs.values() or (old["variants"] <= 1 and not old.get("limit_hit")):
            continue
        line = (f"gone in B: variants {old['variants']} → 0; causes {_set(_causes(old))} → {{}}; "
                f"compile time {_frame_compile_s(a, old):.3g} s → 0 s")  # fmt: skip
        if old.get("limit_hit"):
            line += "; A hit the recompile limit (ran new inputs eagerly past it)"
        subject = _display_key(old) + key[len(_frame_key(old)) :]
        changes.append(Change("frame", subject, old["variants"], 0, False, line))
    return changes


def _frame_worse(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    limits: tuple[bool, bool],
    causes: tuple[set[str], set[str]],
) -> bool:
    """Whether B's frame is worse than A's, by the first of these that differs, so that A → B
    and B → A never both call it a regression: the recompile limit (past it a frame runs new
    inputs eagerly, so A's variant count was capped and fewer variants in B mean less
    compiled), an outlook gone unbounded, more variants, then a new recompile cause (one only
    B has, with none only A had: ``causes`` is (A's alone, B's alone, less those that moved
    from a frame gone in B))."""
    if limits[0] != limits[1]:
        return limits[1]
    unbounded = (_bounded(old) == "unbounded", _bounded(new) == "unbounded")
    if unbounded[0] != unbounded[1]:
        return unbounded[1]
    old_variants = 0 if old is None else int(old["variants"])
    if new["variants"] != old_variants:
        return bool(new["variants"] > old_variants)
    only_a, only_b = causes
    return bool(only_b) and not only_a


def _display_key(frame: dict[str, Any]) -> str:
    """``Cls.forward (file:line)``: the frame as the report names it (its ``display_name``,
    absent before 2026-11), the function's name otherwise."""
    name = frame.get("display_name") or frame["function"]
    return f"{name} ({file_name(frame['file'])}:{frame['line']})"


@dataclass
class _PerCall:
    """One frame's time per call in its compiled graphs: the mean (calls / seconds), and where
    the probes kept each call's duration, the median and the MAD (call-weighted over the
    frame's variants)."""

    seconds: float = 0.0
    calls: int = 0
    middle: float = 0.0  # sum of median x calls, over the variants that have one
    spread: float = 0.0
    timed: int = 0  # calls of the variants with a median

    def value(self) -> float:
        if self.timed == self.calls and self.timed:
            return self.middle / self.timed
        return self.seconds / self.calls

    def mad(self) -> float | None:
        return self.spread / self.timed if self.timed == self.calls and self.timed else None


def _per_call(report: Report) -> dict[str, _PerCall]:
    """Frame -> time per call inside its compiled graphs (runs only)."""
    totals: dict[str, _PerCall] = {}
    for entry in report["compiles"]:
        calls, seconds = entry.get("calls"), entry.get("seconds_in_graph")
        if calls and seconds is not None:
            total = totals.setdefault(_frame_key(entry), _PerCall())
            total.seconds += seconds
            total.calls += calls
            median, mad = entry.get("seconds_per_call_median"), entry.get("seconds_per_call_mad")
            if median is not None and mad is not None:
                total.middle += median * calls
                total.spread += mad * calls
                total.timed += calls
    return totals


# A time per call changes when the medians differ by more than this many MADs of the two runs
# together: the calls' own spread, beside the fixed floors.
SPREAD_MADS = 3.0


def _per_call_changes(a: Report, b: Report, noise: Noise) -> list[Change]:
    """Time per call of each frame's graphs: medians where both runs kept the calls'
    durations (a preempted call does not move a median), and a change within the calls' own
    spread (SPREAD_MADS) is noise; means of older reports."""
    before, after = _per_call(a), _per_call(b)
    per_call = replace(noise, rel=noise.per_call_rel)
    changes = []
    for key in sorted(before.keys() & after.keys()):
        old, new = before[key], after[key]
        mads = (old.mad(), new.mad())
        floor = noise.per_call_s
        if mads[0] is not None and mads[1] is not None:
            floor = max(floor, SPREAD_MADS * (mads[0] + mads[1]))
        found = time_change("time_per_call_s", key, round(old.value(), 6),
                            round(new.value(), 6), floor, per_call)  # fmt: skip
        if found and None not in mads:
            found = [replace(change, detail=f"{change.detail} (medians of the calls)")
                     for change in found]  # fmt: skip
        changes += found
    return changes


def _hits(report: Report) -> tuple[int, int]:
    """(cache lookups that hit, lookups) of a run's compiles."""
    lookups = (report.get("cold_start") or {}).get("lookups") or {}
    return int(lookups.get("hit") or 0), sum(int(n or 0) for n in lookups.values())


def _breaks_by_function(report: Report) -> dict[tuple[str, str], set[tuple[str, str, str]]]:
    """(file name, function) -> the graph-break sites in it, by identity (no line)."""
    found: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    for row in report["graph_breaks"]:
        identity = _site_identity(row["site"])
        found.setdefault(identity[:2], set()).add(identity)
    return found


def _timing_changes(a: Report, b: Report, noise: Noise) -> list[Change]:
    changes = time_change(
        "compile_time_s",
        "total compile time",
        a["summary"]["total_compile_time_s"],
        b["summary"]["total_compile_time_s"],
        noise.compile_s,
        noise,
    )
    hits = (_hits(a), _hits(b))
    if changes and hits[0][0] * hits[1][1] != hits[1][0] * hits[0][1]:
        why = (
            f"A's compiles hit the cache {hits[0][0]} of {hits[0][1]} times, B's {hits[1][0]} "
            f"of {hits[1][1]}: the compile times of starts with other cache states are not "
            "comparable (run both with an empty TORCHINDUCTOR_CACHE_DIR)"
        )
        changes = [not_comparable(change, why) for change in changes]
    return changes + _per_call_changes(a, b, noise)


_GRAPH_PLACE = re.compile(r"(\S+) \(([^():]+):\d+\)")
EXTENT_CHANGED = (
    "not comparable: the graph breaks in this function differ between A and B, so its "
    "compiled graphs cover other code (what ran eagerly in one is compiled in the other)"
)
_BY_EXTENT = frozenset({"time_per_call_s", "kernels", "graph_ops"})


def _by_extent(changes: list[Change], a: Report, b: Report) -> list[Change]:
    """A graph's time per call, kernels or ops, not comparable where the graph breaks of its
    function differ between A and B: a break fixed makes the graph cover code that ran
    eagerly, so it does more, and the program less (EXTENT_CHANGED). Said both ways (A → B
    and B → A read the same), and never a regression."""
    breaks = (_breaks_by_function(a), _breaks_by_function(b))
    kept = []
    for change in changes:
        place = _GRAPH_PLACE.search(change.subject) if change.kind in _BY_EXTENT else None
        if place is not None:  # either way: a faster graph that covers less is no gain
            function = _RESUME_LINE.sub("", place[1]).removeprefix(_RESUME_PREFIX)
            where = (place[2], function)
            if breaks[0].get(where, set()) != breaks[1].get(where, set()):
                change = not_comparable(change, EXTENT_CHANGED)
        kept.append(change)
    return kept


_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def _masked(value: Any) -> Any:
    """A value with the memory addresses of Python reprs masked (``<function pass at
    0x7f3a...>``): another process puts the same object at another address."""
    if isinstance(value, str):
        return _ADDRESS.sub("0x…", value)
    if isinstance(value, dict):
        return {key: _masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value


def environment_changes(a: Report, b: Report) -> list[Change]:
    env_a, env_b = a["environment"], b["environment"]
    changes = []
    for key in ENV_KEYS:
        before, after = _masked(env_a.get(key)), _masked(env_b.get(key))
        if before != after:
            changes.append(Change("environment", key, before, after, False))
    return changes


def _script(report: Report) -> str | None:
    """The file name of the Python script a run ran (``python train.py``), None otherwise."""
    command = (report.get("run") or {}).get("command") or []
    scripts = [arg for arg in command[1:] if isinstance(arg, str) and arg.endswith(".py")]
    return file_name(scripts[0]) if scripts else None


def _files(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {file_name(value["file"])} if isinstance(value.get("file"), str) else set()
        return found.union(*(_files(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_files(item) for item in value))
    return set()


def _renamed(value: Any, old: str, new: str) -> Any:
    """``value`` with every ``file`` whose name is ``old`` named ``new`` (same folder)."""
    if isinstance(value, dict):
        out = {key: _renamed(item, old, new) for key, item in value.items()}
        path = value.get("file")
        if isinstance(path, str) and file_name(path) == old:
            out["file"] = path[: len(path) - len(old)] + new
        return out
    if isinstance(value, list):
        return [_renamed(item, old, new) for item in value]
    return value


def _named_in_a(change: Change, a_script: str | None, b_script: str | None) -> Change:
    """A change about something only A has (a break site or a frame gone in B), with A's
    script name back in its subject (A was matched under B's name, :func:`_as_b_script`)."""
    only_a = change.kind == "removed_break_site" or (change.kind == "frame" and not change.after)
    if not only_a or not a_script or not b_script:
        return change
    return replace(change, subject=change.subject.replace(b_script, a_script))


def _as_b_script(a: Report, b: Report) -> Report:
    """A, with its script named as B's where the two runs ran the same program under two
    names (``train.py``, then a fixed copy ``train_fixed.py``): sites and frames are matched by
    file name, so otherwise every one of them would be new in B and gone from A. Unchanged
    when the names are the same, either is unknown, or B's name is a file A has too."""
    names = (_script(a), _script(b))
    if None in names or names[0] == names[1] or names[1] in _files(a):
        return a
    renamed: Report = _renamed(a, str(names[0]), str(names[1]))
    return renamed


def diff_reports(a: Report, b: Report, noise: Noise | None = None,
                 names: tuple[str, str] = ("A", "B")) -> Diff:  # fmt: skip
    """Every difference from report ``a`` to report ``b`` that matters, regressions marked."""
    from pt2doctor.analysis.built.graph_diff import graph_changes  # loaded on first use
    from pt2doctor.analysis.coldstart.cache_diff import cache_miss_causes
    from pt2doctor.analysis.time.diff import profile_changes

    noise = noise or Noise()
    diff = Diff(*names)
    renamed = _as_b_script(a, b)
    scripts = (_script(a), _script(b)) if renamed is not a else None
    a = renamed
    gone = _break_changes(a, b) + _frame_changes(a, b)
    if scripts is not None:  # what is gone from A is named by A's own script
        gone = [_named_in_a(change, *scripts) for change in gone]
    diff.changes += gone
    diff.changes += _timing_changes(a, b, noise)
    diff.changes += environment_changes(a, b)
    diff.changes += cache_miss_causes(a, b)
    diff.changes += graph_changes(a, b)
    diff.changes += profile_changes(a, b, noise)
    diff.changes = _by_extent(diff.changes, a, b)
    failures = (a["summary"]["failures"], b["summary"]["failures"])
    if failures[0] != failures[1]:
        diff.changes.append(
            Change("failures", "compile failures", *failures, failures[1] > failures[0])
        )
    return diff
