# Two commands do all the set-up: `make day37` renders a day, `make test` runs the suite.
# Both create .venv from pyproject.toml on first use. Rendering needs only the engine's own
# dependencies; the suite adds the test, lint and bench extras (torch among them, for the GPU
# benchmark alone), so a person who only writes posts never downloads it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
DEVICE ?=
PIP := $(PY) -m pip install --quiet --disable-pip-version-check

# Compiled bytecode (the engine's, and pytest's rewritten test modules) is kept under .venv, not
# beside the sources, even where PYTHONDONTWRITEBYTECODE is set: without it every command, and
# every `python -m engine` the tests start, compiles the same files again.
export PYTHONDONTWRITEBYTECODE :=
export PYTHONPYCACHEPREFIX := $(abspath $(VENV))/pycache

.PHONY: venv dev test lint soak all review serve bench bench-day37 clean clean-cache
.DEFAULT_GOAL := day37

venv: $(STAMP)
dev: $(DEV_STAMP)

# Each re-runs only when pyproject.toml changes: a warm `make venv` does nothing.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(PIP) -e ".[test,lint,bench]"
	@touch $(DEV_STAMP)

# `make new-day12 ARGS="--lab path/to/lab.py"`: scaffold Day 12 (spec, lab folder, templates).
new-day%: $(STAMP)
	@$(PY) -m engine new $* $(ARGS)

# `make lab-day01`: run the day's own lab once; writes days/day01.measured/<machine>.json.
lab-day%: $(STAMP)
	@$(PY) -m engine lab days/day$*.yaml $(ARGS)

# `make check-day12`: every platform rule on out/day12's drafts as they are now, your edits
# included (`ARGS=--strict` fails on a number typed by hand too).
check-day%: $(STAMP)
	@$(PY) -m engine check out/day$* $(ARGS)

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

test: $(DEV_STAMP)
	$(PY) -m pytest

# Lint rules, formatting and types: what CI runs beside the tests.
lint: $(DEV_STAMP)
	$(PY) -m ruff check engine tests
	$(PY) -m ruff format --check engine tests
	$(PY) -m mypy

# Every property that draws its examples through helpers.examples (the hostile inputs, the
# simulators against their naive loops, the readers, the thread re-flow…), with many more
# generated inputs than `make test` runs, new ones each time (minutes).
OPEN := (# a parenthesis make's function syntax would otherwise count
soak: $(DEV_STAMP)
	HYPOTHESIS_PROFILE=explore HOSTILE_EXAMPLES=$${HOSTILE_EXAMPLES:-2000} $(PY) -m pytest tests/test_hostile.py $(filter-out tests/test_hostile.py,$(shell grep -l 'examples$(OPEN)' tests/test_*.py)) -q -p no:randomly

# CPU seconds are the judge (wall time and the load average are printed beside them): on a shared
# machine wall time grows with the neighbours' load. bench_build: cold, warm and one-number-changed
# builds side by side.
# Both benchmarks print every row, whatever the first one finds; a missed target fails the make.
bench: $(DEV_STAMP)
	@$(PY) tests/bench/bench_simulator.py; simulator=$$?; $(PY) tests/bench/bench_build.py; build=$$?; \
	  test $$simulator -eq 0 -a $$build -eq 0

bench-day37: $(DEV_STAMP)
	$(PY) -m engine bench days/day37.yaml $(if $(DEVICE),--device $(DEVICE),)

clean:
	rm -rf out/day* out/index.html

# Empties the drawing cache ($$XDG_CACHE_HOME/sixty-days-engine/drawings, engine/charts/drawcache.py):
# the next build draws everything again, to the same bytes.
clean-cache: $(STAMP)
	@$(PY) -c "from engine.charts import drawcache; print('emptied', drawcache.clear() or 'nothing: no cache folder')"
	@$(PY) -c "from engine.render import template_cache; print('emptied', template_cache.clear() or 'nothing')"
	@$(PY) -c "from engine import remembered; print('emptied', remembered.clear() or 'nothing')"
	@$(PY) -c "from engine.platforms import urls; print('emptied', urls.clear() or 'nothing')"
