# lakeapply: `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
WAREHOUSE ?= warehouse
LANDING   ?= landing

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[gold,dev]"
	touch $(STAMP)

.PHONY: setup
setup: $(STAMP) ## Create .venv and install lakeapply with its dev and dbt extras

.PHONY: run
run: $(STAMP) ## Demo on the embedded default: generate LCRs -> bronze -> silver -> gold, then summarize
	$(BIN)/lakeapply --warehouse $(WAREHOUSE) run --landing $(LANDING)

# The CI tier: static checks, then every test not marked slow or soak, on two pytest-xdist workers
# (one SparkSession each; tests sharing a module fixture or the built wheel stay on one worker);
# 33.2 min measured on 2 cores on 2026-11-26 (42.8 min before the small-data Spark profile);
# 56.8 min the same afternoon on a machine where every test ran ~1.8x slower.
# 52.4 min for 777 tests on 2026-11-27 evening (the slower machine; the differential's shared
# applies restored).
# 57.2 min for 826 tests on 2026-12-02 (the crash test's 12 SIGKILLs 19.7 min of it); 45.1 min
# for 830 the same evening without Delta checksum files (three workers measured slower).
# CI stopped it at 90 min on 2026-12-04 (95 % passed, none failed) on a machine ~2x slower,
# and again that evening (86 %; the machine ~3-4x slower). Since then fewer differential
# workloads and a few end-to-end tests whose rules other tests cover run in test-slow instead,
# short --small-data CLI processes (the crash test's) use the JVM's client compiler only, and
# the tests' own sessions the throughput collector. --no-loadscope-reorder keeps tests/conftest.py's
# longest-first order (xdist would otherwise start the biggest groups first).
.PHONY: test
test: check ## Static checks + the test suite (what CI runs)
	$(BIN)/pytest -q -n 2 --dist loadgroup --no-loadscope-reorder -m "not slow and not soak" --durations=30

.PHONY: test-slow
test-slow: $(STAMP) ## Wide property runs: the differential at >= 300 workloads and the crash state machine (72-79 min on 2 cores before the state machine added ~15 min of one worker; 6g per worker)
	LAKEAPPLY_TEST_DRIVER_MEMORY=6g $(BIN)/pytest -q -n 2 --dist loadgroup --no-loadscope-reorder -m slow --durations=30

.PHONY: soak
soak: $(STAMP) ## Crash soak: the 10-kill scenario, then >= 100 seeded SIGKILLs of real ingest/apply processes (hours)
	$(BIN)/pytest -q -s -m soak  # -s: each passed seed and the kill count print as they happen

BENCH_STAMP := $(VENV)/.bench-installed
BENCH_ARGS ?=

$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e ".[gold,dev,bench]"
	touch $(BENCH_STAMP)

.PHONY: bench
bench: $(BENCH_STAMP) ## Apply benchmark vs floor/alternatives (BENCH_ARGS="--sizes 10000 --tables 1"); see benchmarks/results/
	$(BIN)/python benchmarks/apply_bench.py $(BENCH_ARGS)

.PHONY: bench-scaling
bench-scaling: $(BENCH_STAMP) ## 100k UPDATEs spread over tables of 100k vs 10M rows (BENCH_ARGS="--scaling-layout ranged --optimize-file-mib 8", --deletion-vectors)
	$(BIN)/python benchmarks/apply_bench.py --scaling $(BENCH_ARGS)

.PHONY: bench-big
bench-big: $(BENCH_STAMP) ## One 1M-LCR transaction, 100k open transactions, one open over 100 cycles: time + peak memory
	$(BIN)/python benchmarks/big_transactions.py $(BENCH_ARGS)

.PHONY: bench-memory
bench-memory: $(BENCH_STAMP) ## The driver's memory from 100k to 1M LCRs, executors in a JVM of their own (local-cluster)
	$(BIN)/python benchmarks/driver_memory.py $(BENCH_ARGS)

.PHONY: lint
lint: $(STAMP) ## ruff lint + format check
	$(BIN)/ruff check pipelines tests benchmarks examples
	$(BIN)/ruff format --check pipelines tests benchmarks examples

.PHONY: typecheck
typecheck: $(STAMP) ## mypy --strict on the package and the benchmarks
	$(BIN)/mypy
	$(BIN)/mypy --strict benchmarks

.PHONY: sqllint
sqllint: $(STAMP) ## sqlfluff on the dbt models and tests
	$(BIN)/sqlfluff lint dbt/models dbt/tests

.PHONY: check
check: lint typecheck sqllint ## All static checks (lint, format, types, SQL)

.PHONY: gold
gold: $(STAMP) ## Build the gold dbt views in-process and print DBA_APPLY_PROGRESS / DBA_APPLY_ERROR
	$(BIN)/lakeapply --warehouse $(WAREHOUSE) gold

.PHONY: dbt-build
dbt-build: $(STAMP) ## The same dbt build as its own process (no other Spark on the warehouse)
	LAKEAPPLY_WAREHOUSE=$(abspath $(WAREHOUSE)) $(BIN)/dbt build --project-dir dbt --profiles-dir dbt/profiles \
		--target-path $(abspath $(WAREHOUSE))/dbt/target --log-path $(abspath $(WAREHOUSE))/dbt/logs

.PHONY: format
format: $(STAMP) ## Apply ruff fixes and formatting
	$(BIN)/ruff check --fix pipelines tests benchmarks examples
	$(BIN)/ruff format pipelines tests benchmarks examples

.PHONY: schemas
schemas: $(STAMP) ## Regenerate schemas/lcr.schema.json from the contract module
	$(BIN)/python -c "from pathlib import Path; from lakeapply.contract.lcr import write_lcr_json_schema; write_lcr_json_schema(Path('schemas/lcr.schema.json'))"

.PHONY: clean
clean: ## Remove the local warehouse, landing folder and caches (keeps .venv)
	rm -rf $(WAREHOUSE) $(LANDING) .pytest_cache .mypy_cache .ruff_cache spark-warehouse metastore_db derby.log
