# rankmon: `make demo` runs the whole loop, `make test` runs the whole test suite.
# Both bootstrap what they need on a fresh Debian machine.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed

# What running rankmon needs (the demo): the package and its runtime dependencies only.
# The C accelerators (monitor/**/*.c, listed in setup.py) are compiled by the install: rebuild
# when they change.
$(RUN_STAMP): pyproject.toml setup.py $(wildcard monitor/*.c monitor/*/*.c monitor/*/*.h)
	@echo "[1/3] $(VENV): a virtual environment for rankmon"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@scripts/ensure-build-deps $(BIN)/python
	@echo "[2/3] pip: upgrading pip"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "[3/3] pip: rankmon, its runtime dependencies and its C accelerators (about a minute the first time)"
	@$(BIN)/python -m pip install --progress-bar on --disable-pip-version-check -e .
	@touch $(RUN_STAMP)

# Tests, type checks and benchmarks add the dev extras.
$(STAMP): $(RUN_STAMP)
	@echo "pip: the dev extras (pytest, hypothesis, mypy, ruff, the reference evaluators, ...)"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: $(RUN_STAMP)
	$(BIN)/rankmon demo $(DEMO_ARGS)

# The real Prometheus, promtool and Alertmanager come from Debian packages.
system-deps:
	@scripts/ensure-system-deps

# The slowest tests are printed at the end: the suite's budget is 15 minutes on CI.
PYTEST_ARGS ?= --durations=15

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
	$(BIN)/rankmon dashboards render --config dashboards/rankmon.yaml --out dashboards --force
	$(BIN)/rankmon dashboards render --config deploy/rankmon/config.yaml --out deploy/grafana/dashboards --force

# The checked-in Prometheus rules, from the deployed config's alert rules and measures
# (tests/real_parts/test_deploy.py checks they are up to date): never edited by hand.
rules: $(STAMP)
	$(BIN)/rankmon rules render --config deploy/rankmon/config.yaml --output deploy/prometheus/rules/rankmon.yml

bench: $(STAMP)
	$(BIN)/python bench/metrics.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
