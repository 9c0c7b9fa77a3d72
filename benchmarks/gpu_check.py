"""The CUDA paths of pt2doctor on a real GPU (``benchmarks/gpu_check.sh``, under 8 minutes),
each check asserted against the profiler's own events read with ``json``.

1. ``item``: a compiled MLP with ``.item()`` in its loop, profiled by the program itself
   (``with_stack=True``): ``dtoh_sync``, its sync count the trace's, at the ``.item()`` line.
2. ``cudagraphs``: the same under ``mode="reduce-overhead"``: ``cudagraphs``, its replays the
   trace's ``cudaGraphLaunch`` count, every one attributed to a compiled region.
3. ``skip``: dynamic shapes with ``cudagraph_skip_dynamic_graphs``: ``pt2doctor run`` keeps the
   compile's ``cudagraph_skip_reason``.
4. ``tf32``: fp32 matmuls with TF32 off (PyTorch's default): ``tf32_off`` on a GPU of compute
   capability 8 and up, its time the trace's SIMT sgemm kernels'; none on an older GPU.
5. ``kernels``: ``pt2doctor run --kernels``: Triton kernels in ``compiles[].kernels``, the
   fusion log read (``compiles[].fusion.available``).

``--dry-run`` (no GPU; tests/unit/test_gpu_check.py runs it): checks 1, 2 and 4's assertions on
the GPU traces recorded by others in ../shared/corpus/gpu-profiles, through ``pt2doctor
report``, so the parsing is tested before a device is lent.

Usage: python benchmarks/gpu_check.py [--dry-run] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "gpu-profiles"
Report = dict[str, Any]

MLP = """\
import sys
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()
model = torch.compile(model{mode})
x = torch.randn(64, 1024, device="cuda")
activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
with profile(activities=activities, schedule=schedule(wait=2, warmup=2, active=6, repeat=1),
             with_stack=True, on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as prof:
    for step in range(10):
        out = model(x)
{body}
        prof.step()
"""
ITEM_BODY = "        total = out.sum().item()  # CHECK:item"
SKIP = """\
import torch
torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = True
model = torch.compile(torch.nn.Linear(256, 256).cuda(), mode="reduce-overhead", dynamic=True)
for batch in (8, 16, 24, 32, 40):
    model(torch.randn(batch, 256, device="cuda"))
torch.cuda.synchronize()
"""
KERNELS = """\
import torch
model = torch.compile(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU()).cuda())
for _ in range(3):
    model(torch.randn(32, 256, device="cuda"))
torch.cuda.synchronize()
"""


def events(trace: Path) -> list[dict[str, Any]]:
    import gzip

    opener = gzip.open if trace.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(trace, "rt") as stream:
        return [e for e in json.load(stream)["traceEvents"] if e.get("ph") == "X"]


def report(path: Path, work: Path) -> Report:
    out = work / f"{path.name}.report.json"
    subprocess.run([sys.executable, "-m", "pt2doctor", "report", str(path), "--json", str(out)],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    return dict(json.loads(out.read_text()))


def _finding(built: Report, code: str) -> dict[str, Any]:
    found = [f for f in built["findings"] if f["code"] == code]
    assert found, f"no {code} finding: {[f['code'] for f in built['findings']]}"
    return dict(found[0])


def check_item(trace: Path, built: Report, line: int | None) -> str:
    """dtoh_sync, with the trace's own sync count, at the program's ``.item()`` line when the
    trace has Python stacks."""
    raw = events(trace)
    syncs = [e for e in raw if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and "Synchronize" in e["name"]]  # fmt: skip
    finding = _finding(built, "dtoh_sync")
    (device,) = built["device"]
    assert device["syncs"] == len(syncs) == finding["facts"]["syncs"], (device["syncs"], len(syncs))
    has_stacks = any(e.get("cat") == "python_function" for e in raw)
    if has_stacks and line is not None:
        lines = [s["user_line"] for s in device["sync_sites"] if s["user_line"]]
        assert any(f":{line} " in where for where in lines), lines
        return f"dtoh_sync: {len(syncs)} syncs, at line {line}"
    return f"dtoh_sync: {len(syncs)} syncs (no Python stacks in this trace)"


def check_cudagraphs(trace: Path, built: Report) -> str:
    """cudagraphs, its replays the trace's cudaGraphLaunch count, each in a compiled region."""
    launches = [e for e in events(trace) if e["name"] == "cudaGraphLaunch"]
    _finding(built, "cudagraphs")
    (device,) = built["device"]
    assert device["graph_launches"] == len(launches) > 0
    regions = [r for r in device["regions"] if r["label"] != "outside compiled regions"]
    assert sum(r["graph_launches"] for r in regions) == len(launches)
    return f"cudagraphs: {len(launches)} replays, all in compiled regions"


def check_tf32(trace: Path, built: Report) -> str:
    """tf32_off where the GPU has TF32 and FP32 matmuls ran on CUDA cores, with their time."""
    (device,) = built["device"]
    found = [f for f in built["findings"] if f["code"] == "tf32_off"]
    if (device.get("compute_major") or 0) < 8:
        assert not found, "tf32_off on a GPU without TF32"
        return f"tf32: none on compute capability {device.get('compute_major')} (no TF32)"
    simt = sum(e["dur"] for e in events(trace) if e.get("cat") == "kernel"
               and re.search(r"(?:ampere|sm8\d|sm9\d|hopper)_sgemm", e["name"]))  # fmt: skip
    assert found and f"for {simt / 1000:.1f} ms" in found[0]["title"], found
    return f"tf32_off: {simt / 1000:.1f} ms of FP32 matmuls on CUDA cores"


def _program(work: Path, name: str, text: str) -> Path:
    path = work / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return path


def _line_of(path: Path, mark: str) -> int:
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1) if mark in text)


def _run(work: Path, name: str, program: Path, *flags: str) -> Report:
    out = work / f"run-{name}"
    subprocess.run([sys.executable, "-m", "pt2doctor", "run", "--out", str(out), *flags, "--",
                    sys.executable, str(program)], check=True, capture_output=True,
                   timeout=300)  # fmt: skip
    return dict(json.loads((out / "report.json").read_text()))


def on_device(work: Path) -> list[tuple[str, Callable[[], str]]]:
    def item() -> str:
        program = _program(work, "item", MLP.format(mode="", body=ITEM_BODY))
        trace = work / "item.json"
        subprocess.run([sys.executable, str(program), str(trace)], check=True, timeout=300)
        return check_item(trace, report(trace, work), _line_of(program, "CHECK:item"))

    def cudagraphs() -> str:
        program = _program(work, "graphs", MLP.format(mode=', mode="reduce-overhead"', body=""))
        trace = work / "graphs.json"
        subprocess.run([sys.executable, str(program), str(trace)], check=True, timeout=300)
        return check_cudagraphs(trace, report(trace, work))

    def skip() -> str:
        built = _run(work, "skip", _program(work, "skip", SKIP))
        reasons = [c["cudagraph_skip_reason"] for c in built["compiles"]
                   if c.get("cudagraph_skip_reason")]  # fmt: skip
        assert reasons, "no compile says why it skipped CUDA graphs"
        return f"skip reason: {reasons[0]}"

    def tf32() -> str:
        program = _program(work, "tf32", MLP.format(mode="", body="").replace(
            "torch.manual_seed(0)", "torch.manual_seed(0)\ntorch.backends.cuda.matmul.allow_tf32 = False"
        ).replace("(1024, 1024)", "(4096, 4096)").replace("(64, 1024", "(4096, 4096"))  # fmt: skip
        trace = work / "tf32.json"
        subprocess.run([sys.executable, str(program), str(trace)], check=True, timeout=300)
        return check_tf32(trace, report(trace, work))

    def kernels() -> str:
        built = _run(work, "kernels", _program(work, "kernels", KERNELS), "--kernels")
        names = [k["name"] for c in built["compiles"] for k in c.get("kernels") or []]
        assert any(n.startswith("triton_") for n in names), names
        assert any((c.get("fusion") or {}).get("available") for c in built["compiles"])
        return f"kernels: {sum(n.startswith('triton_') for n in names)} Triton kernels, fusion log read"

    return [("item", item), ("cudagraphs", cudagraphs), ("skip", skip), ("tf32", tf32),
            ("kernels", kernels)]  # fmt: skip


def dry_run(work: Path) -> list[tuple[str, Callable[[], str]]]:
    recorded = CORPUS / "a100_compiled_train_cudagraphs.json.gz"

    def item() -> str:
        return check_item(recorded, report(recorded, work), None)

    def cudagraphs() -> str:
        return check_cudagraphs(recorded, report(recorded, work))

    def tf32() -> str:
        alexnet = CORPUS / "a100_alexnet_eager_syncs.json.gz"
        return check_tf32(alexnet, report(alexnet, work))

    return [("item (recorded)", item), ("cudagraphs (recorded)", cudagraphs),
            ("tf32 (recorded)", tf32)]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, check in (dry_run if args.dry_run else on_device)(work):
        try:
            print(f"ok    {name}: {check()}")
        except (AssertionError, subprocess.CalledProcessError, StopIteration) as error:
            failed += 1
            print(f"FAIL  {name}: {error}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
