"""Counts and compile-id lists as a newcomer reads them."""

from __future__ import annotations

from pt2doctor.analysis.text import counted, id_ranges


def test_counts_are_words() -> None:
    assert [counted(1, "time"), counted(5, "variant"), counted(2, "miss")] == [
        "1 time",
        "5 variants",
        "2 misses",
    ]


def test_runs_of_one_frames_compile_ids_are_ranges() -> None:
    ids = [f"0/{n}" for n in range(9)] + ["1/0", "1/1", "!0/0/1", "2/5", "2/7"]
    assert id_ranges(ids) == "0/0–0/8, 1/0, 1/1, !0/0/1, 2/5, 2/7"
    assert id_ranges([]) == ""
