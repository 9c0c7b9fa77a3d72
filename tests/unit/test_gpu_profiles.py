"""The device side of profiler traces recorded on real GPUs by others
(../shared/corpus/gpu-profiles: A100 and V100 Kineto traces, compiled training with CUDA-graph
replays, device-to-host syncs, an eager baseline). Every count pt2doctor reports is checked
against the MANIFEST's table and against the trace read here with ``json``; the report comes
from ``pt2doctor report`` in a subprocess, as a user runs it.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from statistics import median
from typing import Any

import pytest

from conftest import CORPUS_DIR

pytestmark = pytest.mark.corpus

PROFILES = CORPUS_DIR / "gpu-profiles"
NAMES = sorted(p.name for p in PROFILES.glob("*.json.gz")) if PROFILES.is_dir() else []


def events(name: str) -> list[dict[str, Any]]:
    with gzip.open(PROFILES / name) as stream:
        return [e for e in json.load(stream)["traceEvents"] if e.get("ph") == "X"]


def manifest_row(name: str) -> dict[str, str]:
    """The MANIFEST's row for ``name``, by its column headers."""
    lines = [line for line in (PROFILES / "MANIFEST.md").read_text().splitlines()
             if line.startswith("|")]  # fmt: skip
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0].startswith(name):
            return dict(zip(header, cells, strict=True))
    raise AssertionError(f"{name} is not in the MANIFEST")


def report(
    path: Path, tmp_path: Path, *flags: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pt2doctor", "report", str(path), "--json", str(out), *flags],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done, json.loads(out.read_text()) if out.exists() else {}


@pytest.fixture(scope="module")
def profiles() -> dict[str, Any]:
    from pt2doctor.analysis.time.device import device_profile
    from pt2doctor.trace.chrome import read_chrome_trace

    return {name: device_profile(read_chrome_trace(PROFILES / name), name) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_every_count_is_the_manifests_and_the_traces_own(
    name: str, profiles: dict[str, Any]
) -> None:
    profile, row, raw = profiles[name], manifest_row(name), events(name)
    kernels = [e for e in raw if e.get("cat") == "kernel"]
    runtime = [e for e in raw if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    syncs = [e for e in runtime if "Synchronize" in e["name"]]
    dtoh = [e for e in raw if e.get("cat") == "gpu_memcpy" and "DtoH" in e["name"]]
    graph_launches = [e for e in runtime if e["name"] == "cudaGraphLaunch"]
    assert profile.events == len(raw) == int(row["X events"])
    assert profile.kernels == len(kernels) == int(row["GPU kernels"].split()[0])
    assert round(profile.kernel_us / 1000, 1) == float(row["kernel ms"])
    assert profile.graph_launches == len(graph_launches) == int(row["cudaGraphLaunch"])
    assert profile.copies.get("DtoH", None) is None or profile.copies["DtoH"].count == len(dtoh)
    assert len(dtoh) == int(row["DtoH copies"])
    count, ms = re.fullmatch(r"(\d+) \(([\d.]+)\)", row["syncs (host ms waiting)"]).groups()  # type: ignore[union-attr]
    assert profile.syncs == len(syncs) == int(count)
    assert round(profile.sync_us / 1000, 1) == float(ms)
    steps = [e for e in raw if e["name"].startswith("ProfilerStep#")]
    assert len(profile.steps) == (len(steps) or 1) and int(row["ProfilerStep"]) == len(steps)
    forward, backward = row["CompiledFunction fwd/bwd"].split("/")
    regions = Counter(e["name"] for e in raw if e["name"] in ("CompiledFunction",
                                                              "CompiledFunctionBackward"))  # fmt: skip
    calls = {r.label: r.calls for r in profile.regions}
    assert calls.get("CompiledFunction", 0) == regions["CompiledFunction"] == int(forward)
    assert (
        calls.get("CompiledFunctionBackward", 0)
        == regions["CompiledFunctionBackward"]
        == int(backward)
    )


def _enclosing(event: dict[str, Any], candidates: list[dict[str, Any]]) -> str | None:
    inside = [c for c in candidates if c["tid"] == event["tid"] and c["pid"] == event["pid"]
              and c["ts"] <= event["ts"] and event["ts"] + event["dur"] <= c["ts"] + c["dur"]]  # fmt: skip
    return min(inside, key=lambda c: c["dur"])["name"] if inside else None


def test_cuda_graph_replays_are_attributed_to_the_regions_that_launched_them(
    profiles: dict[str, Any],
) -> None:
    for name in (
        "a100_compiled_train_cudagraphs.json.gz",
        "v100_compiled_train_cudagraphs.json.gz",
    ):
        raw = events(name)
        regions = [e for e in raw if e["name"] in ("CompiledFunction", "CompiledFunctionBackward")]
        launches = [e for e in raw if e["name"] == "cudaGraphLaunch"]
        expected = Counter(_enclosing(launch, regions) for launch in launches)
        replayed = {
            launch["args"]["correlation"]: _enclosing(launch, regions) for launch in launches
        }
        kernels = Counter(replayed[e["args"]["correlation"]] for e in raw
                          if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                          and e.get("args", {}).get("correlation") in replayed)  # fmt: skip
        rows = {r.label: r for r in profiles[name].regions}
        assert None not in expected  # every replay came from a compiled region
        for label, count in expected.items():
            assert rows[label].graph_launches == count
            assert rows[label].graph_kernels == kernels[label]


def test_the_a100_compiled_training_trace_says_where_its_161_ms_of_host_waiting_went(
    tmp_path: Path,
) -> None:
    """161 ms in synchronize calls: 158 ms in one cudaDeviceSynchronize after the last step
    (where the profiler stops: the device was that far behind the host), 2.8 ms in 75 stream
    syncs under aten::to > aten::copy_ inside the steps."""
    name = "a100_compiled_train_cudagraphs.json.gz"
    done, built = report(PROFILES / name, tmp_path)
    assert done.returncode == 0, done.stderr
    (finding,) = [f for f in built["findings"] if f["code"] == "dtoh_sync"]
    raw = events(name)
    syncs = [e for e in raw if "Synchronize" in e["name"]]
    steps = [e for e in raw if e["name"].startswith("ProfilerStep#")]
    last_end = max(s["ts"] + s["dur"] for s in steps)
    after = [s for s in syncs if s["ts"] >= last_end]
    assert finding["facts"]["host_wait_ms"] == pytest.approx(
        sum(s["dur"] for s in syncs) / 1000, abs=1e-3
    )
    assert "161.0 ms" in finding["title"]
    assert f"{sum(s['dur'] for s in after) / 1000:.1f} ms outside every step" in finding["title"]
    assert any(e.startswith("75 × cudaStreamSynchronize under aten::to > aten::copy_")
               for e in finding["evidence"])  # fmt: skip
    assert finding["severity"] == "info"  # 2.8 ms of 1 s of steps: not what holds them up
    assert "dtoh_sync" in done.stderr + done.stdout


def test_small_kernels_of_a_compiled_backward_without_cuda_graphs_are_launch_bound(
    profiles: dict[str, Any],
) -> None:
    from pt2doctor.analysis.time.device_findings import device_findings

    name = "v100_compiled_train.json.gz"
    found = {f.subject.name: f for f in device_findings(profiles[name]) if f.code == "launch_bound"}
    assert set(found) == {"CompiledFunction", "CompiledFunctionBackward"}
    raw = events(name)
    regions = [e for e in raw if e["name"] == "CompiledFunctionBackward"]
    launch = {e["args"]["correlation"]: e for e in raw if e.get("cat") == "cuda_runtime"}
    durations = [e["dur"] for e in raw if e.get("cat") == "kernel"
                 and (host := launch.get(e["args"].get("correlation"))) is not None
                 and _enclosing(host, regions) == "CompiledFunctionBackward"]  # fmt: skip
    assert f"median {median(durations):.0f} us" in found["CompiledFunctionBackward"].title
    # With CUDA graphs (the pair's other trace) nothing is launch-bound.
    other = device_findings(profiles["v100_compiled_train_cudagraphs.json.gz"])
    assert not [f for f in other if f.code == "launch_bound"]


def test_a_trace_is_reported_without_importing_torch(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code = (
        "import sys; from pt2doctor.cli import main; "
        f"rc = main(['report', {str(PROFILES / 'a100_event_sync.json.gz')!r}, '--json', {str(out)!r}]); "
        "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["kind"] == "profile"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"this is not json\n", "not a profiler trace (not JSON)"),
        (b"", "is empty"),
        (b'{"traceEvents": []}', "holds no events"),
    ],
)
def test_bad_traces_get_one_line_and_exit_2(tmp_path: Path, content: bytes, says: str) -> None:
    trace = tmp_path / "trace.json"
    trace.write_bytes(content)
    done, _ = report(trace, tmp_path)
    assert done.returncode == 2
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_a_cpu_only_trace_is_said_not_an_error(tmp_path: Path) -> None:
    trace = tmp_path / "cpu.json"
    cpu = [
        e
        for e in events("a100_event_sync.json.gz")
        if e.get("cat") in ("cpu_op", "user_annotation")
    ]
    trace.write_text(json.dumps({"traceEvents": cpu}))
    done, built = report(trace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert built["summary"]["cpu_only"] and "CPU-only" in done.stdout
    assert built["findings"] == []


def test_a_truncated_trace_and_an_unescaped_quote_still_report(tmp_path: Path) -> None:
    """Kineto's layout (one event per ``{ ... }``): the file cut in the middle of an event,
    and a name with a quote Kineto did not escape. Every other event is read; the bad ones
    are counted."""
    with gzip.open(PROFILES / "a100_event_sync.json.gz") as stream:
        text = stream.read().decode()
    assert '"name": "cudaLaunchKernel"' in text
    damaged = text.replace('"name": "cudaLaunchKernel"', '"name": "cuda"LaunchKernel"', 1)
    trace = tmp_path / "damaged.json"
    cut = damaged[: int(len(damaged) * 0.8)]
    trace.write_text(cut[: cut.rfind('"ts"')])
    done, built = report(trace, tmp_path)
    assert done.returncode == 0, done.stderr
    total = sum(1 for e in json.loads(text)["traceEvents"] if e.get("ph") == "X")
    read = built["parse_stats"]["events"]
    assert 0 < read < total and built["parse_stats"]["bad_events"] >= 2


def _diff(a: Path, b: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "pt2doctor", "diff", str(a), str(b),
                           "--format", "json"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_hta_s_control_and_test_traces_diff_one_way_and_back(tmp_path: Path) -> None:
    """HTA's trace-diff pair (an eager A100 step, a compiled V100 step with CUDA graphs):
    the median step time moved as the traces' own ProfilerStep durations say, the replays
    appeared, the GPUs differ; B to A finds the same changes with values swapped."""
    a, b = (
        PROFILES / "a100_eager_train.json.gz",
        PROFILES / "v100_compiled_train_cudagraphs.json.gz",
    )
    forward, backward = _diff(a, b), _diff(b, a)
    steps = {name: median(e["dur"] for e in events(name) if e["name"].startswith("ProfilerStep#"))
             for name in (a.name, b.name)}  # fmt: skip
    (step,) = [c for c in forward["changes"] if c["kind"] == "step_time_ms"]
    assert (step["before"], step["after"]) == (round(steps[a.name] / 1000, 3),
                                                round(steps[b.name] / 1000, 3))  # fmt: skip
    assert step["regression"] is (steps[b.name] > steps[a.name])
    assert any(c["kind"] == "gpu" for c in forward["changes"])
    assert any(c["kind"] == "graph_replays" and c["before"] == 0 for c in forward["changes"])
    mirrored = {(c["kind"], c["subject"], c["after"], c["before"]) for c in backward["changes"]}
    assert {
        (c["kind"], c["subject"], c["before"], c["after"]) for c in forward["changes"]
    } == mirrored
    regressions = {(c["kind"], c["subject"]) for c in forward["changes"] if c["regression"]}
    assert not regressions & {(c["kind"], c["subject"]) for c in backward["changes"]
                              if c["regression"]}  # fmt: skip


def test_fp32_matmuls_on_cuda_cores_of_an_a100_are_tf32_off_and_a_v100_s_are_not(
    profiles: dict[str, Any],
) -> None:
    """AlexNet on an A100: its linear layers ran as ampere_sgemm (FP32 on CUDA cores, TF32 off
    for matmuls, PyTorch's default) beside TF32 convolutions (cuDNN's default). A V100 has no
    TF32: its volta_sgemm kernels are no finding; the eager A100 training step, whose GEMMs
    are TF32 tensor-core kernels but for 2%, is none either."""
    from pt2doctor.analysis.time.device_findings import device_findings

    found = {
        name: [f for f in device_findings(p) if f.code == "tf32_off"]
        for name, p in profiles.items()
    }
    assert [name for name, f in found.items() if f] == ["a100_alexnet_eager_syncs.json.gz"]
    (finding,) = found["a100_alexnet_eager_syncs.json.gz"]
    simt = sum(e["dur"] for e in events("a100_alexnet_eager_syncs.json.gz")
               if e.get("cat") == "kernel" and "ampere_sgemm" in e["name"])  # fmt: skip
    assert f"for {simt / 1000:.1f} ms" in finding.title
    assert "cuDNN's convolutions use TF32" in finding.advice
    assert any("volta_sgemm" in k.name for k in profiles["v100_compiled_train.json.gz"].top_kernels)
