"""pt2doctor against tlparse 0.4.3 on every log of tlparse's own test corpus.

For each log (one file at a time, as ``tlparse FILE`` reads it) three counts must agree:

* compile ids: the keys of tlparse's ``compile_directory.json``. tlparse makes a key for every
  record it accepts (``str`` interning records aside), and a record with no frame id and no frame
  compile id gets the key ``[-/-]`` (export-only and AOTInductor logs have nothing else). pt2doctor's
  ``Run.compile_id_count`` counts real compile ids only, so ``[-/-]`` is set apart: it is compared
  with whether pt2doctor read any record without a compile id. The id *sets* are compared too,
  since equal counts of different ids would be a coincidence, not agreement.
* failures: rows of ``failures_and_restarts.html`` whose type is not ``RestartAnalysis`` (tlparse
  writes one per ``compilation_metrics`` record with a ``fail_type``) against
  ``len(compile_ledger(run).failures)``.
* restarts: ``RestartAnalysis`` rows (one per entry of ``restart_reasons``) against the restart
  reasons of pt2doctor's compiles.

Regenerate a case by hand with ``tlparse FILE -o OUT --no-browser --overwrite``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pt2doctor.analysis.recompiles.ledger import compile_ledger
from pt2doctor.trace import CompileId, ParseStats, find_trace_logs, read_records
from pt2doctor.trace.collect import collect_run

pytestmark = pytest.mark.corpus

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "tlparse-inputs"
LOG_DIRS = ("inputs", "graph_exec_order_tests")
UNKNOWN_KEY = "[-/-]"
# A table row of failures_and_restarts.html: "    <tr> <td> {compile id link} </td>{cells}</tr>".
_ROW = re.compile(r"^    <tr> <td> (?P<cid>.*?) </td>(?P<cells><td>.*)$", re.M)
_RESTART_CELL = "<td> RestartAnalysis </td>"
_CELL_ID = re.compile(r">(\[[^\]<]*\])</a>")


def _corpus_logs() -> list[str]:
    """Every non-empty *.log / *.txt under the corpus' log folders, relative to the corpus."""
    if not CORPUS.is_dir():
        return []
    found = []
    for folder in LOG_DIRS:
        for path in sorted((CORPUS / folder).rglob("*")):
            if path.suffix in {".log", ".txt"} and path.is_file() and path.stat().st_size > 0:
                found.append(path.relative_to(CORPUS).as_posix())
    return found


def _tlparse() -> str | None:
    beside_python = Path(sys.executable).with_name("tlparse")
    if beside_python.is_file():
        return str(beside_python)
    return shutil.which("tlparse")


def _run_tlparse(log: Path, out: Path) -> tuple[dict[str, object], str]:
    """tlparse's compile directory and failures page for one log."""
    tlparse = _tlparse()
    if tlparse is None:
        pytest.skip("tlparse binary not installed (pip install tlparse==0.4.3)")
    cmd = [tlparse, str(log), "-o", str(out), "--no-browser", "--overwrite"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"tlparse failed on {log}:\n{done.stderr[-2000:]}"
    directory = json.loads((out / "compile_directory.json").read_text())
    return directory, (out / "failures_and_restarts.html").read_text()


def _failure_rows(html: str) -> tuple[list[str], list[str]]:
    """(failure rows, restart rows) of failures_and_restarts.html, each as its compile id cell."""
    failures, restarts = [], []
    for row in _ROW.finditer(html):
        (restarts if row["cells"].startswith(_RESTART_CELL) else failures).append(row["cid"])
    return failures, restarts


def _compiles(cells: list[str]) -> list[str]:
    """The compile (attempt dropped, pt2doctor's spelling) of each row's compile id cell."""
    found = []
    for cell in cells:
        match = _CELL_ID.search(cell)
        cid = CompileId.parse(match[1]) if match else None
        found.append(str(cid.compile) if cid else cell.strip())
    return sorted(found)


def _pt2doctor_ids(log: Path) -> tuple[set[str], bool]:
    """The compile ids pt2doctor reads (tlparse's spelling) and whether any record had none."""
    ids: set[str] = set()
    without_id = False
    for record in read_records([log], ParseStats()):
        if record.compile_id is None:
            without_id = True
        else:
            ids.add(f"[{record.compile_id}]")
    return ids, without_id


LOGS = _corpus_logs()


def test_corpus_is_present_or_skipped() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    assert len(LOGS) >= 30, LOGS  # 38 logs in the 2025-09-20 snapshot


@pytest.mark.skipif(not LOGS, reason="tlparse corpus not found under ../shared/corpus")
@pytest.mark.parametrize("name", LOGS)
def test_matches_tlparse(name: str, tmp_path: Path) -> None:
    log = CORPUS / name
    paths = find_trace_logs(log)
    assert paths == [log]
    run = collect_run(paths)
    ledger = compile_ledger(run)
    directory, html = _run_tlparse(log, tmp_path / "tl_out")

    tl_ids = set(directory) - {UNKNOWN_KEY}
    ids, without_id = _pt2doctor_ids(log)
    assert ids == tl_ids
    assert run.compile_id_count == len(tl_ids)
    assert without_id == (UNKNOWN_KEY in directory)

    tl_failures, tl_restarts = _failure_rows(html)
    assert len(tl_failures) + len(tl_restarts) == html.count("<tr> <td>")  # no row missed
    assert len(ledger.failures) == len(tl_failures), (ledger.failures, tl_failures)
    restarts = sum(len(c.restart_reasons) for c in run.compiles)
    assert restarts == len(tl_restarts), tl_restarts
    # The same compiles, too (tlparse names the attempt that logged the metrics: [0/0_1]).
    assert sorted(f.compile_id for f in ledger.failures) == _compiles(tl_failures)
    restarted = [str(c.compile_id) for c in run.compiles for _ in c.restart_reasons]
    assert sorted(restarted) == _compiles(tl_restarts)


def test_failure_rows_parser() -> None:
    html = (
        "    <tr> <th> Compile Id </th> </tr>\n"
        "    <tr> <td> <a href='x'>[0/0_1]</a>  </td><td> RestartAnalysis </td><td><pre>r</pre>"
        "</td><td>Not availble for restarts(yet)!</td></tr>\n"
        "    <tr> <td> <a href='y'>[0/0]</a>  </td><td><pre>BackendCompilerFailed</pre></td>\n"
        "                           <td><pre>boom</pre></td>\n"
        "                          </tr>\n"
    )
    failures, restarts = _failure_rows(html)
    assert len(failures) == 1 and "[0/0]" in failures[0]
    assert len(restarts) == 1 and "[0/0_1]" in restarts[0]
    assert _compiles(failures) == _compiles(restarts) == ["0/0"]
