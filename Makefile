# Two commands do all the set-up: `make day37` renders a day, `make test` runs the suite.
# Both create .venv from pyproject.toml on first use; `make venv` is the set-up alone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEVICE ?=

# glibc gives every freed block over its mmap threshold (a chart drawn at twice its size, a
# page's pixels as floats) back to the kernel, and the next one is faulted in afresh; on these
# VMs a fresh page is dear (a build spent half its system time there). Freed memory stays in
# the process for reuse instead: peak memory about 5% higher, a quarter fewer page faults, and
# the suite's system time down by about three seconds. Ignored where libc is not glibc; a value
# already in the environment is kept.
export GLIBC_TUNABLES ?= glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=4294967296

.PHONY: venv test lint soak all review serve bench bench-day37 clean
.DEFAULT_GOAL := day37

venv: $(STAMP)

# Re-runs only when pyproject.toml changes: a warm `make venv` does nothing.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[test,lint,bench]"
	@touch $(STAMP)

# `make lab-day01`: run the day's own lab once; writes days/day01.measured/<machine>.json.
lab-day%: $(STAMP)
	@$(PY) -m engine lab days/day$*.yaml $(ARGS)

# `make day37`, `make day04`, …: any days/dayNN.yaml.
day%: $(STAMP)
	@$(PY) -m engine build days/day$*.yaml $(ARGS)

all: $(STAMP)
	@$(PY) -m engine build $(sort $(wildcard days/day[0-9]*.yaml)) $(ARGS)

review: $(STAMP)
	@$(PY) -m engine review

# Live preview on http://127.0.0.1:8000/: rebuilds a day when its spec, templates or measurements
# change, and reloads the page. `make serve ARGS="--port 8001"`.
serve: $(STAMP)
	@$(PY) -m engine serve $(sort $(wildcard days/day[0-9]*.yaml)) $(ARGS)

# Compiled bytecode (the engine's, and pytest's rewritten test modules) is kept under .venv, not
# beside the sources, even where PYTHONDONTWRITEBYTECODE is set: without it every run, and every
# `python -m engine` the tests start, compiles the same files again (seconds of the suite).
PYCACHE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(abspath $(VENV))/pycache

test: $(STAMP)
	$(PYCACHE) $(PY) -m pytest

# Lint rules, formatting and types: what CI runs beside the tests.
lint: $(STAMP)
	$(PY) -m ruff check engine tests
	$(PY) -m ruff format --check engine tests
	$(PY) -m mypy

# The hostile-input properties, and the simulator against its naive loop, with many more
# generated inputs than `make test` runs (minutes).
soak: $(STAMP)
	HYPOTHESIS_PROFILE=explore HOSTILE_EXAMPLES=$${HOSTILE_EXAMPLES:-2000} $(PY) -m pytest tests/test_hostile.py tests/test_limits.py tests/test_batching_naive.py -q -p no:randomly

bench: $(STAMP)
	$(PY) tests/bench/bench_simulator.py

bench-day37: $(STAMP)
	$(PY) -m engine bench days/day37.yaml $(if $(DEVICE),--device $(DEVICE),)

clean:
	rm -rf out/day* out/index.html
