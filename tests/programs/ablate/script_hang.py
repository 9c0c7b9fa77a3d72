"""A program that hangs after starting a grandchild (``sleep 120``) and writing its pid to the
file named by its first argument: script-mode ablate must stop the whole process group at
``--timeout``, not only this process."""

import subprocess
import sys
import time
from pathlib import Path

sleeper = subprocess.Popen(["sleep", "120"])
Path(sys.argv[1]).write_text(str(sleeper.pid))
time.sleep(120)  # MARK: hang
