# flowerbench: the front door.  `make` lists the targets; DVC (dvc.yaml) owns the pipeline graph.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DELETE_ON_ERROR:
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DVC := $(VENV)/bin/dvc
# Stages call `python -m flowerbench ...`: put the venv first on PATH for every recipe.
export PATH := $(abspath $(VENV))/bin:$(PATH)
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: help
## help: list the targets
help:
	@awk '/^## / {line = substr($$0, 4); i = index(line, ": "); printf "  %-16s %s\n", substr(line, 1, i - 1), substr(line, i + 2)}' $(MAKEFILE_LIST)

# The venv is a file target built from the lock file (exact pins); nobody activates anything.
$(PY): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(PY)

.PHONY: venv
## venv: create .venv from requirements.lock (every other target does this itself)
venv: $(PY)

.PHONY: reproduce
## reproduce: run the whole pipeline with params.yaml (fetch, train variants, sweep, multi-worker, report)
reproduce: $(PY)
	$(DVC) repro
	@echo "report: reports/report.html (offline) and reports/report.md; metrics: dvc metrics show"

.PHONY: reproduce-blog
## reproduce-blog: the blog's exact run (params-blog.yaml: 224 px, 64/replica, 1+10 epochs, 4 GPUs) as a DVC experiment -> reports/blog/
reproduce-blog: $(PY)
	$(PY) -m flowerbench preflight --params params-blog.yaml
	$(DVC) exp run --name blog-$$(date +%Y%m%d-%H%M%S) $$($(PY) -m flowerbench exp-args --params params-blog.yaml)
	rm -rf reports/blog && mkdir -p reports/blog
	cp -r reports/report.md reports/report.html reports/metrics.json reports/timings.csv reports/figures reports/blog/
	@echo "blog report: reports/blog/report.html; back to the defaults: git checkout params.yaml dvc.lock && dvc checkout"

.PHONY: test
## test: the fast test suite (real TensorFlow and DVC on tiny data; 10-14 min on 2 cores)
test: $(PY)
	$(PY) -m pytest -q $(PYTEST_ARGS)

.PHONY: test-all
## test-all: every test, including the slow ones (ResNet50 end to end)
test-all: $(PY)
	$(PY) -m pytest -q -m "" $(PYTEST_ARGS)

.PHONY: bench
## bench: vs the blog's own code, the input ceiling, overheads, make reproduce in a clone -> reports/bench.md (40-50 min on 2 cores; BENCH_ARGS=--no-reproduce)
bench: $(PY)
	$(PY) benchmarks/run.py $(BENCH_ARGS)

.PHONY: clean
## clean: remove generated results and reports (keeps data/, the venv and reports/reference/)
clean:
	rm -rf results reports/report.md reports/report.html reports/metrics.json reports/timings.csv reports/figures

.PHONY: distclean
## distclean: clean, and remove data/ and the venv
distclean: clean
	rm -rf data/flower_photos data/quarantine data/manifest.json data/downloads $(VENV)
