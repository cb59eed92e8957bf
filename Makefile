# Two commands do all the set-up: `make day37` renders a day, `make test` runs the suite.
# Both create .venv from pyproject.toml on first use; `make venv` is the set-up alone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEVICE ?=

.PHONY: venv test soak all review bench bench-day37 clean
.DEFAULT_GOAL := day37

venv: $(STAMP)

# Re-runs only when pyproject.toml changes: a warm `make venv` does nothing.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[test,bench]"
	@touch $(STAMP)

# `make day37`, `make day04`, …: any days/dayNN.yaml.
day%: $(STAMP)
	@$(PY) -m engine build days/day$*.yaml $(ARGS)

all: $(STAMP)
	@$(PY) -m engine build $(sort $(wildcard days/day[0-9]*.yaml)) $(ARGS)

review: $(STAMP)
	@$(PY) -m engine review

test: $(STAMP)
	$(PY) -m pytest

# The hostile-input properties with many more generated inputs than `make test` runs (minutes).
soak: $(STAMP)
	HOSTILE_EXAMPLES=$${HOSTILE_EXAMPLES:-2000} $(PY) -m pytest tests/test_hostile.py tests/test_limits.py -q -p no:randomly

bench: $(STAMP)
	$(PY) tests/bench/bench_simulator.py

bench-day37: $(STAMP)
	$(PY) -m engine bench days/day37.yaml $(if $(DEVICE),--device $(DEVICE),)

clean:
	rm -rf out/day* out/index.html
