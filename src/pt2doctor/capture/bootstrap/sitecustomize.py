"""Loaded by the watched Python process (``pt2doctor run`` puts this folder first on PYTHONPATH).

Starts pt2doctor's probes, then runs any sitecustomize this one shadows.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_package_root = os.environ.get("PT2DOCTOR_PACKAGE_ROOT", "")
_appended = bool(_package_root) and _package_root not in sys.path
if _appended:
    sys.path.append(_package_root)
try:
    from pt2doctor.capture import child as _pt2doctor_child

    _pt2doctor_child.start()
except Exception as _error:  # never break the user's program
    sys.stderr.write(f"pt2doctor: probes not installed: {_error}\n")
finally:  # what the probes need is imported: leave the program's sys.path as it was
    if _appended and _package_root in sys.path:
        sys.path.remove(_package_root)


def _run_shadowed_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    others = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_run_shadowed_sitecustomize()
