"""``python -m pt2doctor``."""

import sys

from pt2doctor.cli import main

sys.exit(main())
