# pt2doctor developer targets. `make help` lists them.
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
PY := $(VENV)/bin/python
STAMP := $(VENV)/.pt2doctor-installed
DEMO_DIR ?= build/demo
# One persisted Inductor cache for the whole test session: a warm cache makes a cold process ~7x faster.
export TORCHINDUCTOR_CACHE_DIR ?= $(CURDIR)/build/inductor-cache
# Byte-compile the sources first: with PYTHONDONTWRITEBYTECODE set every process would otherwise
# compile pt2doctor from source again (`report` of a 3.6 MB log: 0.15 s of CPU instead of 0.12 s),
# and the suite starts hundreds of them. Stale .pyc files are only ignored, never wrong.
BYTECODE := $(PY) -m compileall -q src tests examples

.DEFAULT_GOAL := help
.PHONY: help venv demo demo-shot test test-claims test-matrix test-fast test-wheel chromium lint golden bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

venv: $(STAMP) ## create .venv with torch ($(TORCH_SPEC)) and the project's dev extras

demo: $(STAMP) ## `pt2doctor run` on a serving loop, then `check` of a transformer's eval cells (~3 min)
	rm -rf $(DEMO_DIR) $(DEMO_DIR)-check
	@$(BYTECODE) >/dev/null
	$(VENV)/bin/pt2doctor run --out $(DEMO_DIR) --warmup-calls 3 -- $(PY) examples/serving_loop.py
	@# Quick mode on the eval cells (fp32 and bf16, two sequence buckets) under Inductor, with
	@# a profile of each group saying why its speedup is what it is; the
	@# whole matrix with training cells takes ~10 min on 2 CPU cores: drop --quick and --cells.
	$(VENV)/bin/pt2doctor check examples/cases/transformer_block.py --quick --cells eval --profile \
		--out $(DEMO_DIR)-check

test: $(STAMP) ## run the test suite (unit + real torch.compile runs: several minutes)
	@$(BYTECODE) >/dev/null
	$(PY) -m pytest -n 2 --dist worksteal -q -m "not failure_matrix and not claims" --durations=25

test-matrix: $(STAMP) ## the failure corpus ablated from each program's own folder too (~2 min; CI runs it after test)
	@$(BYTECODE) >/dev/null
	$(PY) -m pytest -n 2 --dist worksteal -q -m failure_matrix

test-claims: $(STAMP) ## performance claims against their fix applied and timed (~3 min, one process, nothing beside it; CI runs it)
	@$(BYTECODE) >/dev/null
	$(PY) -m pytest -p no:xdist -q -m claims

test-fast: $(STAMP) ## the edit loop (< 60 s): unit tests and in-process tests, no torch program runs
	@$(BYTECODE) >/dev/null
	$(PY) -m pytest -n 2 --dist worksteal -q -m "not torch_run"

test-wheel: $(STAMP) ## build the wheel, install it WITHOUT torch in a clean venv: report, diff, run's one-line refusal
	rm -rf build/wheel build/wheel-venv
	$(PY) -m pip wheel --quiet --no-deps -w build/wheel .
	$(PYTHON) -m venv build/wheel-venv
	build/wheel-venv/bin/python -m pip install --quiet build/wheel/pt2doctor-*.whl
	build/wheel-venv/bin/python tests/wheel_check.py

chromium: ## install Chromium (Debian, as root) for the HTML report's browser test; tests never install
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium

lint: $(STAMP) ## ruff + mypy --strict on the package
	$(VENV)/bin/ruff check src tests benchmarks examples docs
	$(VENV)/bin/ruff format --check src tests benchmarks examples docs
	$(VENV)/bin/mypy

golden: $(STAMP) ## regenerate the renderers' golden files (tests/golden) from tests/data/reports, checks, ablates; review the diff
	PT2DOCTOR_UPDATE_GOLDEN=1 $(PY) -m pytest -q -p no:xdist tests/unit/test_golden.py tests/unit/test_check_golden.py tests/unit/test_ablate_golden.py

demo-shot: ## screenshot build/demo/report.html into docs/demo-report.png (needs chromium; run make demo first)
	$(PY) docs/screenshot.py $(DEMO_DIR)/report.html docs/demo-report.png

bench: $(STAMP) ## benchmarks: report vs tlparse, run's probe overhead (results: docs/PERFORMANCE.md)
	$(PY) benchmarks/bench_report.py
	$(PY) benchmarks/bench_run_overhead.py

clean: ## remove build outputs (keeps .venv)
	rm -rf build .pytest_cache .mypy_cache .ruff_cache
