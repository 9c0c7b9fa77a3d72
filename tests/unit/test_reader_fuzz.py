"""The reader never raises on damaged logs, and the damage it can see shows up in ParseStats.

Real logs from tlparse's corpus (comp_metrics.log, comp_failure.log, simple.log; all three read
with zero problems) are truncated, byte-flipped, reordered, interleaved and salted with blank or
garbage lines; every mutant goes through ``read_records``, ``collect_run`` and
``compile_ledger``. Each property asserts only what must hold for its mutation: a byte changed
inside a payload line always breaks that payload's md5, while a digit changed inside an
envelope's JSON can silently give another valid record, so only "no exception" is asserted there.

comp_failure.log and simple.log end without a final newline, so their last record is already
"unterminated"; damage there is counted as truncated_records rather than md5_mismatches.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pt2doctor.analysis.recompiles.ledger import compile_ledger
from pt2doctor.trace import ParseStats, read_records
from pt2doctor.trace.collect import collect_run
from pt2doctor.trace.types import Run

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "tlparse-inputs"
INPUTS = CORPUS / "inputs"
LOGS = ("comp_metrics.log", "comp_failure.log", "simple.log")

if not CORPUS.is_dir():
    pytest.skip(f"tlparse corpus not found at {CORPUS}", allow_module_level=True)

pytestmark = pytest.mark.corpus

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
NL, TAB = 0x0A, 0x09
LEVELS = b"VIWEC"  # glog severity letters the reader accepts as the first byte of a record


# --- the logs and their layout -------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """A log cut into lines and records (an envelope line plus the tab lines after it)."""

    data: bytes
    lines: list[bytes]
    """``splitlines(keepends=True)``: the last line lacks "\\n" when the file does."""
    units: list[list[bytes]]
    stats: ParseStats
    run: Run

    @property
    def terminated(self) -> bool:
        return self.data.endswith(b"\n")

    def line_at(self, pos: int) -> tuple[int, bytes]:
        """(start offset, line) of the line holding byte ``pos``."""
        start = self.data.rfind(b"\n", 0, pos) + 1
        end = self.data.find(b"\n", pos)
        return start, self.data[start : len(self.data) if end < 0 else end]

    def in_last_unit(self, pos: int) -> bool:
        """Whether ``pos`` lies in the file's last record (the unterminated one, if any)."""
        last_start = len(self.data) - sum(len(line) for line in self.units[-1])
        return pos >= last_start


@cache
def layout(name: str) -> Layout:
    data = (INPUTS / name).read_bytes()
    lines = data.splitlines(keepends=True)
    units: list[list[bytes]] = []
    for line in lines:
        if line.startswith(b"\t") and units:
            units[-1].append(line)
        else:
            units.append([line])
    stats = ParseStats()
    for _ in read_records([INPUTS / name], stats):
        pass
    assert stats.problems == 0 and stats.blank_lines == 0  # the mutations start from clean logs
    return Layout(data, lines, units, stats, collect_run([INPUTS / name]))


def terminated(lines: list[bytes]) -> list[bytes]:
    return [line if line.endswith(b"\n") else line + b"\n" for line in lines]


def has_payload(line: bytes) -> bool:
    return not line.startswith(b"\t") and b'"has_payload": "' in line


# --- running the pipeline on a mutant ------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _all_payloads(kind: str, meta: Any) -> bool:
    return True


def read_mutant(workdir: Path, data: bytes) -> tuple[ParseStats, Run]:
    """Run the reader (decoding every payload), the collector and the ledger over ``data``."""
    path = workdir / "mutant.log"
    path.write_bytes(data)
    stats = ParseStats()
    records = list(read_records([path], stats, _all_payloads))
    run = collect_run([path])
    compile_ledger(run)
    assert run.parse_stats.as_dict() == stats.as_dict()
    assert stats.records >= len(records)
    # Every line is counted once, whatever the mutation did to the record structure.
    assert stats.lines == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    return stats, run


def counters(stats: ParseStats) -> dict[str, int]:
    return {
        "non_trace_lines": stats.non_trace_lines,
        "bad_envelopes": stats.bad_envelopes,
        "md5_mismatches": stats.md5_mismatches,
        "truncated_records": stats.truncated_records,
    }


log_names = st.sampled_from(LOGS)


# --- truncation ----------------------------------------------------------------------------------


def truncation_damage(data: bytes, cut: int) -> str | None:
    """What keeping ``data[:cut]`` breaks: None (a cut between records, or only the last
    newline lost), ``"md5"`` (whole payload lines lost), ``"payload"`` or ``"envelope"`` (the
    last line cut in a payload line or in the envelope line)."""
    if cut in (0, len(data)):
        return None
    if data[cut - 1] == NL:
        return "md5" if data[cut] == TAB else None
    if data[cut] == NL and (cut + 1 == len(data) or data[cut + 1] != TAB):
        return None
    line_start = data.rfind(b"\n", 0, cut) + 1
    return "payload" if data[line_start] == TAB else "envelope"


@FUZZ
@given(name=log_names, fraction=st.floats(0, 1, exclude_max=True))
def test_truncation_is_counted(workdir: Path, name: str, fraction: float) -> None:
    data = layout(name).data
    cut = int(fraction * len(data))
    stats, _ = read_mutant(workdir, data[:cut])
    damage = truncation_damage(data, cut)
    if damage is None:
        assert stats.problems == 0, counters(stats)
    elif damage == "md5":
        assert stats.md5_mismatches == 1 and stats.problems == 1, counters(stats)
    elif damage == "payload":
        assert stats.truncated_records == 1 and stats.problems == 1, counters(stats)
    else:  # cut inside the glog prefix (non-trace line) or inside the JSON (truncated record)
        assert stats.truncated_records + stats.non_trace_lines == 1, counters(stats)
        assert stats.problems == 1, counters(stats)


@FUZZ
@given(name=log_names, unit=st.integers(0), offset=st.integers(1))
def test_truncation_inside_a_record_is_counted(
    workdir: Path, name: str, unit: int, offset: int
) -> None:
    """Cuts aimed strictly inside a record (uniform cuts mostly land in simple.log's big
    payloads): never at its start, nor at or just before its final newline."""
    lay = layout(name)
    index = unit % len(lay.units)
    start = sum(len(line) for u in lay.units[:index] for line in u)
    size = len(b"".join(lay.units[index]))
    cut = start + 1 + offset % (size - 2)
    stats, _ = read_mutant(workdir, lay.data[:cut])
    assert truncation_damage(lay.data, cut) is not None
    assert stats.problems == 1, counters(stats)


# --- byte flips ----------------------------------------------------------------------------------

FLIP_TARGETS = ("anywhere", "payload_body", "payload_tab", "line_start", "newline", "json_end")


@cache
def flip_positions(name: str, target: str) -> list[int]:
    lay = layout(name)
    data, positions, offset = lay.data, [], 0
    for line in lay.lines:
        body_end = offset + len(line.rstrip(b"\n"))
        if target == "newline" and line.endswith(b"\n"):
            positions.append(body_end)
        elif target == ("payload_tab" if line[0] == TAB else "line_start"):
            positions.append(offset)
        elif target == "payload_body" and line[0] == TAB:
            positions.extend(range(offset + 1, body_end))
        elif target == "json_end" and line[0] != TAB:
            assert data[body_end - 1 : body_end] == b"}"
            positions.append(body_end - 1)
        offset += len(line)
    return positions if target != "anywhere" else list(range(len(data)))


def check_flip(lay: Layout, pos: int, new: int, stats: ParseStats) -> None:
    """Assert what must follow from setting byte ``pos`` of the log to ``new``."""
    data, old = lay.data, lay.data[pos]
    line_start, line = lay.line_at(pos)
    unterminated_tail = not lay.terminated and lay.in_last_unit(pos)
    seen = counters(stats)
    if new == NL:  # a line split in two: the record loses lines or its envelope is cut
        assert stats.problems >= 1, seen
    elif old == NL:  # two lines joined
        if pos == len(data) - 1:
            return  # the file's final newline: the last line just gains a byte
        assert stats.problems >= 1, seen
    elif line[0] == TAB and pos > line_start:  # inside a payload line: its md5 breaks
        broken = stats.truncated_records if unterminated_tail else stats.md5_mismatches
        assert broken == 1 and stats.problems == 1, seen
    elif line[0] == TAB:  # the payload tab: the line leaves its record
        assert stats.md5_mismatches + stats.truncated_records >= 1, seen
    elif pos == line_start:  # the glog level letter
        if new not in LEVELS:
            assert stats.problems >= 1, seen
    elif pos == line_start + len(line) - 1:  # the envelope's closing brace
        broken = stats.truncated_records if unterminated_tail else stats.bad_envelopes
        assert broken == 1 and stats.problems == 1, seen
    # Elsewhere in an envelope the JSON may stay valid (a digit of frame_id): no claim.


@FUZZ
@given(
    name=log_names,
    target=st.sampled_from(FLIP_TARGETS),
    index=st.integers(0),
    new=st.integers(0, 255),
)
def test_byte_flip_is_counted(workdir: Path, name: str, target: str, index: int, new: int) -> None:
    lay = layout(name)
    positions = flip_positions(name, target)
    pos = positions[index % len(positions)]
    if new == lay.data[pos]:
        new = (new + 1) % 256
    mutant = bytearray(lay.data)
    mutant[pos] = new
    stats, _ = read_mutant(workdir, bytes(mutant))
    check_flip(lay, pos, new, stats)


@FUZZ
@given(name=log_names, flips=st.lists(st.tuples(st.integers(0), st.integers(0, 255)), max_size=40))
def test_many_byte_flips_never_raise(
    workdir: Path, name: str, flips: list[tuple[int, int]]
) -> None:
    mutant = bytearray(layout(name).data)
    for index, value in flips:
        mutant[index % len(mutant)] = value
    read_mutant(workdir, bytes(mutant))


# --- reordering ----------------------------------------------------------------------------------


@FUZZ
@given(name=log_names, data=st.data())
def test_reordered_records_read_clean(workdir: Path, name: str, data: st.DataObject) -> None:
    """Records are self-contained: any order of whole records reads with no problems."""
    lay = layout(name)
    units = [b"".join(terminated(unit)) for unit in lay.units]
    order = data.draw(st.permutations(range(len(units))))
    stats, run = read_mutant(workdir, b"".join(units[i] for i in order))
    assert counters(stats) == counters(lay.stats)
    assert (stats.records, stats.payloads) == (lay.stats.records, lay.stats.payloads)
    assert run.compile_id_count == lay.run.compile_id_count
    restarts = sorted(r for c in run.compiles for r in c.restart_reasons)
    assert restarts == sorted(r for c in lay.run.compiles for r in c.restart_reasons)
    assert sorted(str(c.compile_id) for c in run.compiles if c.fail_type) == sorted(
        str(c.compile_id) for c in lay.run.compiles if c.fail_type
    )


@FUZZ
@given(name=log_names, data=st.data())
def test_swapped_payload_lines_break_md5(workdir: Path, name: str, data: st.DataObject) -> None:
    lay = layout(name)
    candidates = [
        i for i, unit in enumerate(lay.units) if len({line.rstrip(b"\n") for line in unit[1:]}) > 1
    ]
    index = data.draw(st.sampled_from(candidates))
    unit = lay.units[index]
    first, second = data.draw(
        st.tuples(st.integers(1, len(unit) - 1), st.integers(1, len(unit) - 1)).filter(
            lambda pair: unit[pair[0]].rstrip(b"\n") != unit[pair[1]].rstrip(b"\n")
        )
    )
    swapped = terminated(unit)
    swapped[first], swapped[second] = swapped[second], swapped[first]
    units = [b"".join(terminated(u)) for u in lay.units]
    units[index] = b"".join(swapped)
    stats, _ = read_mutant(workdir, b"".join(units))
    assert stats.md5_mismatches == 1 and stats.problems == 1, counters(stats)


@FUZZ
@given(name=log_names, data=st.data())
def test_shuffled_lines_never_raise(workdir: Path, name: str, data: st.DataObject) -> None:
    lines = terminated(layout(name).lines)
    start = data.draw(st.integers(0, len(lines) - 1))
    window = lines[start : start + data.draw(st.integers(1, 200))]
    shuffled = data.draw(st.permutations(window))
    read_mutant(workdir, b"".join(lines[:start] + list(shuffled) + lines[start + len(window) :]))


# --- interleaving two logs -----------------------------------------------------------------------


def interleave(first: list[bytes], second: list[bytes]) -> Iterator[tuple[bytes, bytes | None]]:
    """(line, the line that followed it in its own log) for a line-by-line interleaving."""
    for index in range(max(len(first), len(second))):
        for lines in (first, second):
            if index < len(lines):
                yield lines[index], lines[index + 1] if index + 1 < len(lines) else None


@FUZZ
@given(
    pair=st.permutations(LOGS).map(lambda names: names[:2]),
    offsets=st.tuples(st.integers(0, 60), st.integers(0, 60)),
    length=st.integers(1, 400),
)
def test_interleaved_lines_are_counted(
    workdir: Path, pair: tuple[str, str], offsets: tuple[int, int], length: int
) -> None:
    """Two processes writing one file line by line: every payload cut off its envelope shows."""
    windows = [
        terminated(layout(name).lines)[offset : offset + length]
        for name, offset in zip(pair, offsets, strict=True)
    ]
    merged = list(interleave(*windows))
    out = [line for line, _ in merged]
    stats, _ = read_mutant(workdir, b"".join(out))
    # An envelope whose next output line is not its own first payload line. A first payload
    # line that is a lone tab is left out: a one-line empty payload "" would still match.
    separated = any(
        has_payload(line)
        and nxt is not None
        and nxt.startswith(b"\t")
        and nxt != b"\t\n"
        and (j + 1 == len(out) or out[j + 1] != nxt)
        for j, (line, nxt) in enumerate(merged)
    )
    if separated:
        assert stats.md5_mismatches >= 1, counters(stats)


@FUZZ
@given(pair=st.permutations(LOGS).map(lambda names: names[:2]), picks=st.lists(st.booleans()))
def test_interleaved_records_read_clean(
    workdir: Path, pair: tuple[str, str], picks: list[bool]
) -> None:
    """Two processes writing one file record by record: nothing is lost or broken."""
    queues = [[b"".join(terminated(u)) for u in layout(name).units] for name in pair]
    out: list[bytes] = []
    for pick in picks:
        if queues[pick]:
            out.append(queues[pick].pop(0))
    out += queues[0] + queues[1]
    stats, _ = read_mutant(workdir, b"".join(out))
    assert stats.problems == 0, counters(stats)
    assert stats.records == sum(layout(name).stats.records for name in pair)
    assert stats.payloads == sum(layout(name).stats.payloads for name in pair)


# --- blank and garbage lines ---------------------------------------------------------------------


def insert_lines(lines: list[bytes], inserts: list[tuple[int, bytes]]) -> list[bytes]:
    """Insert each (index, line) before ``lines[index % (n + 1)]`` (the end only when the last
    line is terminated, so an insert never joins the file's unterminated last line)."""
    slots = len(lines) + (1 if lines[-1].endswith(b"\n") else 0)
    out = list(lines)
    for index, line in sorted(((i % slots, line) for i, line in inserts), reverse=True):
        out.insert(index, line)
    return out


garbage_lines = st.binary(max_size=60).map(lambda raw: b"garbage " + raw.replace(b"\n", b" "))


@FUZZ
@given(
    name=log_names,
    inserts=st.lists(st.tuples(st.integers(0), garbage_lines.map(lambda g: g + b"\n")), min_size=1),
)
def test_garbage_lines_are_counted(
    workdir: Path, name: str, inserts: list[tuple[int, bytes]]
) -> None:
    lay = layout(name)
    out = insert_lines(lay.lines, inserts)
    stats, run = read_mutant(workdir, b"".join(out))
    assert stats.non_trace_lines >= len(inserts), counters(stats)
    assert stats.records == lay.stats.records
    splits_payload = any(
        line.startswith(b"garbage ") and j + 1 < len(out) and out[j + 1].startswith(b"\t")
        for j, line in enumerate(out)
    )
    if splits_payload:
        assert stats.md5_mismatches + stats.truncated_records >= 1, counters(stats)
    else:
        assert stats.problems == stats.non_trace_lines == len(inserts), counters(stats)
        assert run.compile_id_count == lay.run.compile_id_count


@cache
def clean_payload_gaps(name: str) -> list[int]:
    """Line indexes between two payload lines of a payload with no empty line of its own."""
    lay, gaps, index = layout(name), [], 0
    for unit in lay.units:
        if all(line.rstrip(b"\n") != b"\t" for line in unit[1:]):
            gaps.extend(range(index + 2, index + len(unit)))
        index += len(unit)
    return gaps


@FUZZ
@given(name=log_names, data=st.data())
def test_blank_lines_inside_payloads_are_skipped(
    workdir: Path, name: str, data: st.DataObject
) -> None:
    """The blank-line stutter tlparse tolerates, where the reader handles it today: between two
    payload lines of a payload without empty lines of its own."""
    gaps = clean_payload_gaps(name)
    picks = data.draw(st.lists(st.sampled_from(gaps), min_size=1, max_size=10, unique=True))
    stats, _ = read_mutant(
        workdir, b"".join(insert_lines(layout(name).lines, [(i, b"\n") for i in picks]))
    )
    assert stats.problems == 0, counters(stats)
    assert stats.blank_lines == len(picks)
    assert (stats.records, stats.payloads) == (
        layout(name).stats.records,
        layout(name).stats.payloads,
    )


@FUZZ
@given(name=log_names, inserts=st.lists(st.integers(0), min_size=1, max_size=10))
def test_blank_lines_anywhere_are_skipped(workdir: Path, name: str, inserts: list[int]) -> None:
    lay = layout(name)
    stats, run = read_mutant(
        workdir, b"".join(insert_lines(lay.lines, [(i, b"\n") for i in inserts]))
    )
    assert stats.problems == 0, counters(stats)
    assert (stats.records, stats.payloads) == (lay.stats.records, lay.stats.payloads)
    assert run.compile_id_count == lay.run.compile_id_count


# --- deterministic cases -------------------------------------------------------------------------


def test_crlf_log_reads_clean(workdir: Path) -> None:
    lay = layout("simple.log")
    stats, run = read_mutant(workdir, lay.data.replace(b"\n", b"\r\n"))
    assert stats.md5_mismatches == 0 and stats.problems == 0, counters(stats)
    assert (stats.records, stats.payloads) == (lay.stats.records, lay.stats.payloads)
    assert run.compile_id_count == lay.run.compile_id_count


def test_corrupted_json_log_has_one_md5_mismatch() -> None:
    stats = ParseStats()
    records = list(read_records([INPUTS / "simple_corrupted_json.log"], stats))
    assert stats.md5_mismatches == 1
    assert stats.problems == 1
    assert stats.records == 76 and len(records) > 0


def test_unterminated_log_cut_mid_record_is_truncated(workdir: Path) -> None:
    lay = layout("comp_failure.log")
    assert not lay.terminated
    last = b"".join(lay.units[-1])
    cut = len(lay.data) - len(last) // 2  # the middle of the last record
    stats, _ = read_mutant(workdir, lay.data[:cut])
    assert stats.truncated_records == 1
    assert stats.problems == 1, counters(stats)


def synthetic_record(payload: bytes) -> bytes:
    """One artifact record as torch writes it: envelope with the payload's md5, tab lines."""
    digest = hashlib.md5(payload).hexdigest()
    envelope = (
        b'V0403 07:28:48.051000 139877824898048 torch/_logging/structured.py:19] {"artifact": '
        b'{"name": "note", "encoding": "string"}, "frame_id": 0, "frame_compile_id": 0, '
        b'"attempt": 0, "has_payload": "' + digest.encode() + b'"}\n'
    )
    return envelope + b"".join(b"\t" + line + b"\n" for line in payload.split(b"\n"))


def test_synthetic_record_reads_clean(workdir: Path) -> None:
    stats, run = read_mutant(workdir, synthetic_record(b"a\n\tb\n\nc"))
    assert stats.payloads == 1 and stats.problems == 0, counters(stats)
    assert run.compile_id_count == 1


def with_blank_line(where: str) -> tuple[bytes, int, int]:
    """A log with one blank line inserted at ``where``: (bytes, records, payloads) expected.

    All but the last case insert into comp_failure.log (made newline-terminated); the last is a
    one-record log whose payload has a line with text that starts with a tab (``\\tb``).
    """
    if where == "tab_indented_payload_text":
        lines = synthetic_record(b"a\n\tb\nc").splitlines(keepends=True)
        return b"".join([*lines[:2], b"\n", *lines[2:]]), 1, 1
    lay = layout("comp_failure.log")
    lines = terminated(lay.lines)
    starts = [sum(len(u) for u in lay.units[:i]) for i in range(len(lay.units))]
    payload_units = [
        (s, u) for s, u in zip(starts, lay.units, strict=True) if len(u) >= 3 and has_payload(u[0])
    ]
    if where == "middle_of_payload":
        at = next(s for s, u in payload_units if b"\t\n" not in terminated(u)) + 2
    elif where == "before_first_payload_line":
        at = payload_units[0][0] + 1
    elif where == "after_last_payload_line":
        at = payload_units[0][0] + len(payload_units[0][1])
    elif where == "after_record_without_payload":
        at = next(s for s, u in zip(starts, lay.units, strict=True) if not has_payload(u[0])) + 1
    elif where == "next_to_empty_payload_line":
        at = lines.index(b"\t\n")
    else:
        assert where == "file_start"
        at = 0
    return b"".join([*lines[:at], b"\n", *lines[at:]]), lay.stats.records, lay.stats.payloads


BLANK_PLACES = (
    "middle_of_payload",
    "file_start",
    "before_first_payload_line",
    "after_last_payload_line",
    "after_record_without_payload",
    "next_to_empty_payload_line",
    "tab_indented_payload_text",
)


@pytest.mark.parametrize("where", BLANK_PLACES)
def test_blank_line_is_skipped(workdir: Path, where: str) -> None:
    """tlparse drops every empty line before it groups payload lines (a payload's own empty
    lines keep their tab), so a stuttered blank line breaks nothing; the reader must agree:
    no problem, one blank line counted."""
    data, records, payloads = with_blank_line(where)
    stats, _ = read_mutant(workdir, data)
    assert stats.problems == 0, counters(stats)
    assert (stats.records, stats.payloads) == (records, payloads)
    assert stats.blank_lines == 1


def _tlparse() -> str | None:
    beside_python = Path(sys.executable).with_name("tlparse")
    return str(beside_python) if beside_python.is_file() else shutil.which("tlparse")


@pytest.mark.parametrize("where", BLANK_PLACES)
def test_tlparse_skips_the_same_blank_line(tmp_path: Path, where: str) -> None:
    """The oracle for test_blank_line_is_skipped: ``tlparse --strict`` (exit 1 on a bad glog
    line, bad JSON or md5 mismatch) accepts every one of these files."""
    tlparse = _tlparse()
    if tlparse is None:
        pytest.skip("tlparse binary not installed")
    log = tmp_path / "blank.log"
    log.write_bytes(with_blank_line(where)[0])
    cmd = [tlparse, str(log), "-o", str(tmp_path / "out"), "--no-browser", "--strict"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-1000:]
