"""``pt2doctor check``: acceptance and CI gate (driver, worker, timing, budget, statistics, report, views, renderers)."""
