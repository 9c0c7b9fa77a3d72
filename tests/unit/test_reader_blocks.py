"""The reader cuts the log into units block by block: block boundaries must change nothing.

Real corpus logs (and damaged variants: CRLF, blank lines at record edges and at the end, cut
off mid-payload) are read with blocks of a few bytes, so that units straddle blocks in every
way, and compared with a read in one block. The payload checks run in the helper process too,
since it reads payloads by the file offsets the blocks give.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pt2doctor.trace import ParseStats, payload_checks, read_records
from pt2doctor.trace import units as units_module

INPUTS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "tlparse-inputs"
INPUTS = INPUTS / "inputs"

if not INPUTS.is_dir():
    pytest.skip(f"tlparse corpus not found at {INPUTS}", allow_module_level=True)

pytestmark = pytest.mark.corpus


def _blank_lines_at_edges(data: bytes) -> bytes:
    """A blank line before every third envelope and after the last line, twice."""
    lines = data.split(b"\n")
    out = []
    for index, line in enumerate(lines):
        if index % 3 == 0 and not line.startswith(b"\t"):
            out.append(b"")
        out.append(line)
    return b"\n".join(out) + b"\n\n\n"


VARIANTS = {
    "comp_metrics.log": lambda data: data,
    "comp_failure.log": lambda data: data,  # ends without a final newline
    "simple.log": lambda data: data.replace(b"\n", b"\r\n"),
    "artifacts.log": _blank_lines_at_edges,
    "links.log": lambda data: data[: len(data) * 2 // 3],  # cut off inside a record
}


def _all_payloads(kind: str, meta: Any) -> bool:
    return True


def _read(path: Path) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    stats = ParseStats()
    records = [
        (r.kind, r.lineno, str(r.compile_id), r.timestamp, r.payload_bytes)
        for r in read_records([path], stats, _all_payloads)
    ]
    return stats.as_dict(), records


@pytest.mark.parametrize("name", list(VARIANTS))
def test_block_boundaries_change_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    path = tmp_path / name
    path.write_bytes(VARIANTS[name]((INPUTS / name).read_bytes()))
    monkeypatch.setattr(units_module, "BLOCK_SIZE", 1 << 30)
    whole = _read(path)
    assert whole[0]["records"] > 0 and whole[1]
    for block, join_first in ((1, 1), (2, 1), (3, 2), (7, 64), (97, 1), (4096, 512), (65536, 1)):
        monkeypatch.setattr(units_module, "BLOCK_SIZE", block)
        monkeypatch.setattr(units_module, "JOIN_FIRST", join_first)
        assert _read(path) == whole, (block, join_first)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_helper_process_finds_payloads_across_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    path = tmp_path / name
    path.write_bytes(VARIANTS[name]((INPUTS / name).read_bytes()))
    whole = _read(path)
    monkeypatch.setattr(payload_checks, "PROCESS_MIN_BYTES", 0)
    for block in (5, 333, 8192):
        monkeypatch.setattr(units_module, "BLOCK_SIZE", block)
        assert _read(path) == whole, block
