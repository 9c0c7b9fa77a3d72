"""CompileId: Dynamo's own spelling of a compile id, printed and parsed back."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pt2doctor.trace import ParseStats, read_records
from pt2doctor.trace.records import CompileId


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0/1", CompileId(0, 1)),
        ("0/1_2", CompileId(0, 1, attempt=2)),
        ("!3/0/1", CompileId(0, 1, compiled_autograd_id=3)),
        ("!3/0/1_2", CompileId(0, 1, attempt=2, compiled_autograd_id=3)),
        ("[0/0]", CompileId(0, 0)),
        (" [12/34_5] ", CompileId(12, 34, attempt=5)),
    ],
)
def test_parse_accepts_dynamo_spellings(text: str, expected: CompileId) -> None:
    assert CompileId.parse(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage",
        "0",
        "0/",
        "/1",
        "a/b",
        "0/1/2",
        "0/-1",
        "+1/2",
        "!x/0/1",
        "!3",
        "-/-",
        "0/1_x",
    ],
)
def test_parse_rejects_garbage(text: str) -> None:
    assert CompileId.parse(text) is None


@pytest.mark.parametrize("text", ["²/0", "0/1²", "!²/0/1", "0/1_²"])
def test_parse_rejects_non_ascii_digits_without_raising(text: str) -> None:
    assert CompileId.parse(text) is None


@pytest.mark.parametrize(
    ("compile_id", "text"),
    [
        (CompileId(0, 1), "0/1"),
        (CompileId(0, 1, attempt=2), "0/1_2"),
        (CompileId(0, 1, compiled_autograd_id=3), "!3/0/1"),
        (CompileId(4, 1, attempt=2, compiled_autograd_id=3), "!3/4/1_2"),
        (CompileId(None, None), "-/-"),
    ],
)
def test_str_is_dynamos_spelling(compile_id: CompileId, text: str) -> None:
    assert str(compile_id) == text


def test_compile_drops_the_attempt_only() -> None:
    restarted = CompileId(2, 3, attempt=1, compiled_autograd_id=0)
    assert restarted.compile == CompileId(2, 3, compiled_autograd_id=0)
    assert CompileId(2, 3).compile == CompileId(2, 3)


def test_ids_order_by_frame_then_compile_then_attempt() -> None:
    ids = [CompileId(1, 0), CompileId(0, 1, attempt=1), CompileId(0, 1), CompileId(0, 0)]
    assert sorted(ids) == [CompileId(0, 0), CompileId(0, 1), CompileId(0, 1, 1), CompileId(1, 0)]


_ids = st.builds(
    CompileId,
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 100),
    st.none() | st.integers(0, 1000),
)


@given(_ids)
def test_str_parse_round_trip(compile_id: CompileId) -> None:
    assert CompileId.parse(str(compile_id)) == compile_id
    assert CompileId.parse(f"[{compile_id}]") == compile_id


@given(st.text(max_size=20))
def test_parse_never_raises_on_ascii_noise(text: str) -> None:
    noise = text.encode("ascii", "ignore").decode()
    result = CompileId.parse(noise)
    assert result is None or CompileId.parse(str(result)) == result


def test_reader_gives_each_record_its_own_compile_id_when_neighbours_look_alike(
    tmp_path: Path,
) -> None:
    """The reader reuses the previous record's id when its raw fields are the same objects, and
    interns ids by value and type: ``true`` and ``1.0`` equal ``1`` in Python but are not ids,
    and a frame id above the small-int cache is a new object on every record."""
    ids = [
        '"frame_id": 1, "frame_compile_id": 0',
        '"frame_id": 1, "frame_compile_id": 0',
        '"frame_id": true, "frame_compile_id": 0',
        '"frame_id": 1.0, "frame_compile_id": 0',
        '"frame_id": 1, "frame_compile_id": 0, "attempt": 2',
        '"frame_id": 100000, "frame_compile_id": 7',
        '"frame_id": 100000, "frame_compile_id": 7',
        '"frame_id": [1], "frame_compile_id": 0',
        '"frame_id": 1, "frame_compile_id": 0, "compiled_autograd_id": 3',
        '"rank": 0',
    ]
    log = tmp_path / "ids.log"
    log.write_text(
        "".join(f'V1130 09:00:00.000000 1 f.py:1] {{"dynamo_start": {{}}, {x}}}\n' for x in ids)
    )
    got = [record.compile_id for record in read_records([log], ParseStats())]
    assert got == [
        CompileId(1, 0),
        CompileId(1, 0),
        CompileId(None, 0),  # true is not a frame id
        CompileId(None, 0),  # nor is 1.0
        CompileId(1, 0, attempt=2),
        CompileId(100000, 7),
        CompileId(100000, 7),
        CompileId(None, 0),  # a list is not one either
        CompileId(1, 0, compiled_autograd_id=3),
        None,
    ]
    assert [str(cid) for cid in got[:5]] == ["1/0", "1/0", "-/0", "-/0", "1/0_2"]
