# rankmon: `make demo` runs the whole loop, `make test` runs the whole test suite.
# Both bootstrap what they need on a fresh Debian machine.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck check bench clean system-deps dashboards

# The C accelerators (monitor/_native) are compiled by the install: rebuild when they change.
$(STAMP): pyproject.toml setup.py $(wildcard monitor/_native/*.c monitor/_native/*.h)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@scripts/ensure-build-deps $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rankmon demo $(DEMO_ARGS)

# The real Prometheus, promtool and Alertmanager come from Debian packages.
system-deps:
	@scripts/ensure-system-deps

test: $(STAMP) system-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy monitor tests bench
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy monitor tests bench

# The checked-in dashboards, each set from its config (tests check both are up to date).
dashboards: $(STAMP)
	$(BIN)/rankmon dashboards render --config dashboards/rankmon.yaml --out dashboards
	$(BIN)/rankmon dashboards render --config deploy/rankmon/config.yaml --out deploy/grafana/dashboards

bench: $(STAMP)
	$(BIN)/python bench/metrics.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
