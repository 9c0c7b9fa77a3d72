"""The wheel, installed without torch (``make test-wheel``; CI runs it): what reads logs,
profiler traces and reports works, and a command that runs torch says in one line how to
get it. Run by the wheel's own venv's python, not by pytest (no ``test_`` prefix)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
PT2DOCTOR = str(Path(sys.executable).with_name("pt2doctor"))


def pt2doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PT2DOCTOR, *args], capture_output=True, text=True, timeout=300)


def report(path: Path, out: Path) -> dict[str, object]:
    done = pt2doctor("report", str(path), "--json", str(out))
    assert done.returncode == 0, done.stderr
    return dict(json.loads(out.read_text()))


def main() -> None:
    assert importlib.util.find_spec("torch") is None, "torch is installed in the wheel's venv"
    work = Path(tempfile.mkdtemp(prefix="wheel-check-"))
    # A profiler trace, written here (a host op and a kernel it launched), and the corpus's.
    trace = work / "trace.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 10, "dur": 5, "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_0", "pid": 0, "tid": 7,
         "ts": 20, "dur": 30, "args": {"correlation": 7}},
    ]}))  # fmt: skip
    built = report(trace, work / "trace.report.json")
    assert built["kind"] == "profile" and built["summary"]["kernels"] == 1  # type: ignore[index]
    said = ["a profiler trace written here"]
    gpu = CORPUS / "gpu-profiles" / "a100_compiled_train_cudagraphs.json.gz"
    log = CORPUS / "tlparse-inputs" / "inputs" / "simple.log"
    if gpu.is_file():
        built = report(gpu, work / "gpu.json")
        assert any(f["code"] == "dtoh_sync" for f in built["findings"])  # type: ignore[attr-defined]
        said.append(gpu.name)
    if log.is_file():
        built = report(log, work / "log.json")
        assert built["summary"]["compiles"] > 0  # type: ignore[index]
        said.append(log.name)
    reports = ROOT / "tests" / "data" / "reports"
    done = pt2doctor("diff", str(reports / "demo_eager.json"), str(reports / "hostile.json"))
    assert done.returncode in (0, 1), done.stderr
    # A stored report.json rendered again (report/document.py reads it back).
    again = pt2doctor("report", str(reports / "demo_eager.json"), "--format", "md")
    golden = ROOT / "tests" / "golden" / "demo_eager.md"
    assert again.returncode == 0 and again.stdout == golden.read_text(), again.stderr
    if log.is_file():  # the metrics extra is not installed either: one line, exit 2
        metrics = pt2doctor("report", "--follow", str(log), "--until-exit", "999999",
                            "--metrics-textfile", str(work / "m.prom"))  # fmt: skip
        assert metrics.returncode == 2 and "pt2doctor[metrics]" in metrics.stderr, metrics
    refused = pt2doctor("run", "--", sys.executable, "-c", "pass")
    assert refused.returncode == 2, refused
    assert refused.stderr.strip().count("\n") == 0 and "pt2doctor[run]" in refused.stderr
    print(
        f"wheel without torch: report on {', '.join(said)}; a stored report.json rendered "
        "again; diff; run refused in one line"
    )


if __name__ == "__main__":
    main()
