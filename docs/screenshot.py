"""Screenshot an HTML report with headless Chromium: ``make demo-shot`` (after ``make demo``)
writes docs/demo-report.png from build/demo/report.html for the README.

Usage: python docs/screenshot.py REPORT.html OUT.png [HEIGHT]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    page, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    height = int(sys.argv[3]) if len(sys.argv) > 3 else 2200
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as profile:
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                 f"--user-data-dir={profile}", f"--window-size=1280,{height}"]  # fmt: skip
        command = [chromium, *flags, f"--screenshot={out}", page.as_uri()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
