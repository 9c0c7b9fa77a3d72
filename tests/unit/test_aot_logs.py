"""AOTInductor logs of tlparse's corpus (``aoti_compile_and_package``: no Dynamo frame, no
compile id on the wrapper code or the provenance): ``pt2doctor report`` lists the kernels
AOTInductor built, equal to the log's own ``cppCodeToPost`` keys read here with ``json``, and
says the log holds no Dynamo compile instead of "every compile is explained"."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import CORPUS_DIR
from oracles import raw_file_records

pytestmark = pytest.mark.corpus

INPUTS = CORPUS_DIR / "tlparse-inputs" / "inputs"
AOT_LOGS = (
    sorted(p.name for p in INPUTS.glob("inductor_provenance_aot_*")) if INPUTS.is_dir() else []
)


def provenance_keys(log: Path) -> Counter[str]:
    """Kernel names of the node-mapping artifact's ``cppCodeToPost``, their debug handles
    (``:3``) dropped; a log older than that artifact has only its former name (a newer one
    writes both, the same table)."""
    tables: dict[str, dict[str, object]] = {}
    for envelope, payload in raw_file_records(log):
        name = (envelope.get("artifact") or {}).get("name")
        if name in ("inductor_provenance_tracking_node_mappings",
                    "inductor_triton_kernel_to_post_grad_nodes"):  # fmt: skip
            table = json.loads(payload)
            tables[name] = table.get("cppCodeToPost", table if "preToPost" not in table else {})
    table = tables.get("inductor_provenance_tracking_node_mappings",
                       tables.get("inductor_triton_kernel_to_post_grad_nodes", {}))  # fmt: skip
    return Counter(re.sub(r":\d+$", "", key) for key in table)


@pytest.mark.parametrize("name", AOT_LOGS)
def test_an_aot_log_reports_the_kernels_its_provenance_names(name: str, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pt2doctor", "report", str(INPUTS / name), "--json", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    kernels = Counter(k["name"] for k in report["aot_inductor"]["kernels"])
    assert kernels == provenance_keys(INPUTS / name) and kernels
    assert report["summary"]["compiles"] == 0
    assert "every compile is explained" not in done.stdout
    assert f"AOTInductor build of {sum(kernels.values())} kernels" in " ".join(done.stdout.split())


def test_a_cudagraph_skip_reason_in_compilation_metrics_reaches_the_compile(
    tmp_path: Path,
) -> None:
    """tlparse's autotune_with_compile_id.log (the one corpus log whose compilation_metrics
    has the field) with its first compile's ``cudagraph_skip_reason`` set, as torch writes it
    when mode="reduce-overhead" skips CUDA graphs (no GPU here to make one)."""
    text = (INPUTS / "autotune_with_compile_id.log").read_text()
    reason = "skipping cudagraphs due to mutated inputs (1 instances)"
    assert '"cudagraph_skip_reason": null' in text
    log = tmp_path / "skip.log"
    log.write_text(text.replace('"cudagraph_skip_reason": null', json.dumps(
        {"cudagraph_skip_reason": reason})[1:-1], 1))  # fmt: skip
    out = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "pt2doctor", "report", str(log), "--json", str(out)],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    compiles = json.loads(out.read_text())["compiles"]
    assert [c.get("cudagraph_skip_reason") for c in compiles].count(reason) == 1
