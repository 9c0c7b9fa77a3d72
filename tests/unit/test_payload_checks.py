"""A big log's payload md5s are checked in a helper process: it must find what inline checks find.

The reader checks a small log's payloads in its own thread and sends a big log's payload offsets
to ``digests.py`` running as a separate process (the threshold is lowered here so that corpus
logs take that path). Both must count the same damage, on clean and damaged real logs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pt2doctor.errors import Pt2DoctorError
from pt2doctor.trace import ParseStats, payload_checks, read_records
from pt2doctor.trace.payload_checks import InlineChecker, ProcessChecker, payload_checker

INPUTS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "tlparse-inputs"
INPUTS = INPUTS / "inputs"

if not INPUTS.is_dir():
    pytest.skip(f"tlparse corpus not found at {INPUTS}", allow_module_level=True)

pytestmark = pytest.mark.corpus


def _all_payloads(kind: str, meta: object) -> bool:
    return True


Read = tuple[dict[str, object], list[tuple[str, int, bytes | None]]]


def _read(path: Path, threshold: int, monkeypatch: pytest.MonkeyPatch) -> Read:
    monkeypatch.setattr(payload_checks, "PROCESS_MIN_BYTES", threshold)
    stats = ParseStats()
    records = [
        (r.kind, r.lineno, r.payload_bytes) for r in read_records([path], stats, _all_payloads)
    ]
    return stats.as_dict(), records


def _first_payload_line(data: bytes) -> int:
    """The offset of a byte inside the first payload line that has some text."""
    at = data.index(b"\n\t") + 2
    while data[at : at + 1] in (b"\n", b"\r"):
        at = data.index(b"\n\t", at) + 2
    return at


def _flipped(data: bytes) -> bytes:
    at = _first_payload_line(data)
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def _stutter(data: bytes) -> bytes:
    """A blank line between two payload lines (tlparse skips it; so does the reader)."""
    at = data.index(b"\n\t", _first_payload_line(data)) + 1
    return data[:at] + b"\n" + data[at:]


MUTANTS = {
    "clean": lambda data: data,
    "crlf": lambda data: data.replace(b"\n", b"\r\n"),
    "payload_byte_flipped": _flipped,
    "blank_line_inside_payload": _stutter,
    "cut_mid_payload": lambda data: data[: len(data) - 40],
}
EXPECTED = {  # (md5_mismatches, truncated_records, blank_lines) each mutant must show
    "clean": (0, 0, 0),
    "crlf": (0, 0, 0),
    "payload_byte_flipped": (1, 0, 0),
    "blank_line_inside_payload": (0, 0, 1),
    "cut_mid_payload": (0, 1, 0),
}


@pytest.mark.parametrize("name", ["simple.log", "comp_metrics.log"])
@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_helper_process_counts_what_inline_checks_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, mutant: str
) -> None:
    path = tmp_path / name
    path.write_bytes(MUTANTS[mutant]((INPUTS / name).read_bytes()))
    inline_stats, inline_records = _read(path, 1 << 60, monkeypatch)
    helper_stats, helper_records = _read(path, 0, monkeypatch)
    assert helper_stats == inline_stats
    assert helper_records == inline_records
    found = (
        helper_stats["md5_mismatches"],
        helper_stats["truncated_records"],
        helper_stats["blank_lines"],
    )
    assert found == EXPECTED[mutant]


def _log_with_payloads(path: Path, payloads: list[tuple[bytes, str]]) -> list[tuple[int, int]]:
    """Write one artifact record per (payload, md5 written in its envelope); their raw spans."""
    spans, out = [], b""
    for payload, digest in payloads:
        out += (
            b'V0403 07:28:48.051000 1 x.py:1] {"artifact": {"name": "n"}, "frame_id": 0, '
            b'"frame_compile_id": 0, "has_payload": "' + digest.encode() + b'"}\n'
        )
        start = len(out)
        out += b"".join(b"\t" + line + b"\n" for line in payload.split(b"\n"))
        spans.append((start, len(out) - 1))
    path.write_bytes(out)
    return spans


def test_helper_process_reports_the_mismatches_it_found(tmp_path: Path) -> None:
    """The counts come back from the helper: only it sees these payloads."""
    good, bad = b"line one\nline two", b"tampered"
    digests = [hashlib.md5(good).hexdigest(), hashlib.md5(b"other").hexdigest()]
    path = tmp_path / "two.log"
    spans = _log_with_payloads(path, [(good, digests[0]), (bad, digests[1])])
    stats = ParseStats()
    checker = payload_checker(path, 1 << 40, stats)
    assert isinstance(checker, ProcessChecker)
    data = path.read_bytes()
    for (start, end), digest in zip(spans, digests, strict=True):
        checker.check(data, 0, start, end, digest, (True, False))
    checker.close()
    assert (stats.md5_mismatches, stats.truncated_records) == (1, 0)
    assert checker.process.returncode == 0


def test_small_log_is_checked_inline(tmp_path: Path) -> None:
    path = tmp_path / "small.log"
    _log_with_payloads(path, [(b"x", hashlib.md5(b"x").hexdigest())])
    checker = payload_checker(path, path.stat().st_size, ParseStats())
    assert type(checker) is InlineChecker


def test_a_helper_that_dies_is_an_error_not_a_silent_pass(tmp_path: Path) -> None:
    path = tmp_path / "one.log"
    _log_with_payloads(path, [(b"x", hashlib.md5(b"x").hexdigest())])
    checker = payload_checker(path, 1 << 40, ParseStats())
    assert isinstance(checker, ProcessChecker)
    checker.process.kill()
    checker.process.wait()
    with pytest.raises(Pt2DoctorError, match="md5 checker process stopped"):
        checker.close()


def test_stopping_early_ends_the_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(payload_checks, "PROCESS_MIN_BYTES", 0)
    started: list[ProcessChecker] = []
    real_init = ProcessChecker.__init__

    def remember(self: ProcessChecker, path: Path, stats: ParseStats) -> None:
        real_init(self, path, stats)
        started.append(self)

    monkeypatch.setattr(ProcessChecker, "__init__", remember)
    records = read_records([INPUTS / "simple.log"], ParseStats())
    next(records)
    records.close()
    assert len(started) == 1 and started[0].process.returncode is not None
