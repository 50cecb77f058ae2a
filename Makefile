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
# Nothing outside the repo: DVC's site cache (default /var/tmp/dvc, shared by every clone on the host)
# and matplotlib's font cache (default ~/.cache) live in git-ignored folders here.
export DVC_SITE_CACHE_DIR := $(abspath .dvc/tmp/site-cache)
export MPLCONFIGDIR := $(abspath $(VENV))/matplotlib
PYTEST_ARGS ?=
BENCH_ARGS ?=
KSTEPS_ARGS ?=
GPU_CHECK_ARGS ?=

.PHONY: help
## help: list the targets
help:
	@awk '/^## / {line = substr($$0, 4); i = index(line, ": "); printf "  %-16s %s\n", substr(line, 1, i - 1), substr(line, i + 2)}' $(MAKEFILE_LIST)

# The venv's make target is a stamp file inside it, never the interpreter: .venv/bin/python is a
# symlink to the system Python, and touching it would re-date (or, as a non-root user, fail on)
# the system interpreter.  Set-up writes nothing outside the repo (pip's cache is off).
MIN_PYTHON := 3.11
PIP_VERSION := 26.3
PIP_TOOLS_VERSION := 7.7.0
STAMP := $(VENV)/.flowerbench-installed
PIP := $(PY) -m pip --disable-pip-version-check --no-cache-dir
# One line and a non-zero exit, before anything is created, when $(PYTHON) is older than the lock needs.
CHECK_PYTHON = @$(PYTHON) -c 'import sys; need = tuple(map(int, "$(MIN_PYTHON)".split("."))); \
  sys.exit(0 if sys.version_info[:2] >= need else "flowerbench: error: Python >= $(MIN_PYTHON) is needed \
  (requirements.lock pins numpy 2.4), but $(PYTHON) is " + sys.version.split()[0] + "; run make PYTHON=python$(MIN_PYTHON) ...")'

# GPU=1: TensorFlow with its CUDA wheels from requirements-gpu.lock (the same pins plus nvidia-*).
GPU ?=
LOCK_FILE := $(if $(GPU),requirements-gpu.lock,requirements.lock)

$(STAMP): $(LOCK_FILE) pyproject.toml
	$(CHECK_PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet pip==$(PIP_VERSION)
	$(PIP) install --quiet -r $(LOCK_FILE)
	$(PIP) install --quiet --no-deps -e .
	@echo "flowerbench: $(VENV) ready ($$($(PY) --version), pip $(PIP_VERSION), $(LOCK_FILE))" > $@
	@cat $@

.PHONY: venv
## venv: create .venv from requirements.lock (every other target does this itself); GPU=1: from requirements-gpu.lock
venv: $(STAMP)

# requirements.lock is generated, never edited: pip-compile (pip-tools, in a venv of its own)
# resolves pyproject.toml's direct dependencies (and the `test` extra), keeping the pins already
# in the lock unless LOCK_ARGS=--upgrade (or --upgrade-package NAME) asks for newer ones.
LOCK_VENV := .venv-lock
LOCK_ARGS ?=
.PHONY: lock
## lock: regenerate requirements.lock from pyproject.toml with pip-compile (LOCK_ARGS=--upgrade for newer pins)
lock:
	$(CHECK_PYTHON)
	test -x $(LOCK_VENV)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_VENV) && \
	  $(LOCK_VENV)/bin/python -m pip --disable-pip-version-check --no-cache-dir install --quiet \
	    pip==$(PIP_VERSION) pip-tools==$(PIP_TOOLS_VERSION); }
	$(LOCK_VENV)/bin/pip-compile --quiet --strip-extras --no-emit-index-url --no-emit-find-links \
	  --extra test --output-file requirements.lock $(LOCK_ARGS) pyproject.toml
	@echo "requirements.lock: $$(grep -c '==' requirements.lock) pins; the next make target rebuilds .venv from it"

.PHONY: lock-gpu
## lock-gpu: regenerate requirements-gpu.lock (tensorflow[and-cuda]) with pip-compile, constrained to requirements.lock
lock-gpu:
	$(CHECK_PYTHON)
	test -x $(LOCK_VENV)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_VENV) && \
	  $(LOCK_VENV)/bin/python -m pip --disable-pip-version-check --no-cache-dir install --quiet \
	    pip==$(PIP_VERSION) pip-tools==$(PIP_TOOLS_VERSION); }
	$(LOCK_VENV)/bin/pip-compile --quiet --strip-extras --no-emit-index-url --no-emit-find-links \
	  --extra test --extra gpu --constraint requirements.lock --output-file requirements-gpu.lock $(LOCK_ARGS) pyproject.toml
	@echo "requirements-gpu.lock: $$(grep -c '==' requirements-gpu.lock) pins; install with make venv GPU=1 (on a GPU host)"

# One `dvc repro` per checkout at a time (flock), then: dvc.lock pruned of stages dvc.yaml no longer
# has, and one summary of which results were measured now and which were reused (with their host).
define REPRODUCE
	@mkdir -p .dvc/tmp
	@since=$$(date -u +%Y-%m-%dT%H:%M:%S+00:00); \
	flock --nonblock --conflict-exit-code 75 .dvc/tmp/flowerbench-reproduce.lock $(DVC) repro $(1) || { rc=$$?; \
	  if [ $$rc -eq 75 ]; then echo "flowerbench: another \`make reproduce\` holds this checkout" \
	    "(.dvc/tmp/flowerbench-reproduce.lock); wait for it to finish" >&2; fi; exit $$rc; }; \
	$(PY) -m flowerbench prune-lock; \
	$(PY) -m flowerbench measured --since "$$since"
	@echo "report: reports/report.html (offline) and reports/report.md; metrics: dvc metrics show"
endef

.PHONY: reproduce
## reproduce: run the pipeline with params.yaml on this host (reruns training when the host differs from the last run's)
reproduce: $(STAMP)
	$(call REPRODUCE,)

.PHONY: remeasure
## remeasure: measure every result again on this host (empties results/rounds and results/secondary, then dvc repro --force)
remeasure: $(STAMP)
	rm -rf results/rounds results/secondary
	$(call REPRODUCE,--force)

AB_ARGS ?=
.PHONY: ab
## ab: reproducibility: measure the headline rounds again (B, held), judge every distinct paired ratio against results/rounds (A) by an equivalence test (reproduces / differs / undetermined, +-15 %) -> reports/ab.md (AB_ARGS=--fresh: A too; --split K: A, B = rounds 1..K, K+1..; --against DIR)
ab: $(STAMP)
	$(DVC) repro host fetch
	$(PY) -m flowerbench ab $(AB_ARGS)

.PHONY: predict-heldout
## predict-heldout: the model's predictions for heldout.yaml's settings (one short probe each) -> predictions/heldout.json, to commit before make validate
predict-heldout: $(STAMP)
	$(DVC) repro host fetch
	$(PY) -m flowerbench predict-heldout

.PHONY: validate
## validate: measure the held-out settings in rounds and judge the committed predictions (refuses unless committed; an hour or more) -> reports/validation/
validate: $(STAMP)
	$(DVC) repro host fetch
	$(PY) -m flowerbench validate

.PHONY: rejudge
## rejudge: judge the committed held-out validation again by the current rule, from its recorded numbers (nothing measured, terms not read) -> reports/validation/
rejudge: $(STAMP)
	$(PY) -m flowerbench validate --rejudge

.PHONY: prune-lock
## prune-lock: drop dvc.lock entries of stages dvc.yaml no longer has (make reproduce does it too)
prune-lock: $(STAMP)
	$(PY) -m flowerbench prune-lock

.PHONY: reproduce-blog
## reproduce-blog: the blog's exact run (params-blog.yaml: 224 px, 64/replica, 1+10 epochs, 4 GPUs) as a DVC experiment -> reports/blog/
reproduce-blog: $(STAMP)
	$(PY) -m flowerbench preflight --params params-blog.yaml
	$(DVC) exp run --name blog-$$(date +%Y%m%d-%H%M%S) $$($(PY) -m flowerbench exp-args --params params-blog.yaml)
	rm -rf reports/blog && mkdir -p reports/blog
	cp -r reports/report.md reports/report.html reports/metrics.json reports/plots reports/figures reports/blog/
	@echo "blog report: reports/blog/report.html; back to the defaults: git checkout params.yaml dvc.lock && dvc checkout"

# pytest-xdist: one worker per core (TEST_WORKERS=0 runs the tests in this process, one after
# another).  Tests go to workers one at a time (--dist load); what several share (the tiny pipeline,
# the equivalence steps) is built once per run under a file lock (tests/conftest.py, once_per_run).
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist load

.PHONY: test
## test: the fast test suite (real TensorFlow and DVC on tiny data, on 2 xdist workers; ~5 min on 2 cores)
test: $(STAMP)
	$(PY) -m pytest -q $(XDIST) $(PYTEST_ARGS)

.PHONY: test-slow
## test-slow: only the slow tests (ResNet50, DVC experiments, hard kills, signals, terms, multi-worker; CI runs them after `make test`)
test-slow: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -m slow $(PYTEST_ARGS)

.PHONY: test-all
## test-all: every test, the slow ones included
test-all: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -m "" $(PYTEST_ARGS)

.PHONY: gpu-check
## gpu-check: the blog's settings on one GPU (1 GPU + 4 logical GPUs, fit/custom, mixed precision) in <= 8 min -> reports/reference/gpu-<model>/ (needs make venv GPU=1); GPU_CHECK_ARGS=--hypotheses on 4 GPUs: input-bound vs dispatch-bound
gpu-check: $(STAMP)
	$(PY) -m benchmarks.gpu_check $(GPU_CHECK_ARGS)

.PHONY: bench
## bench: vs the blog's own code, the input ceiling, overheads, make reproduce in a clone -> reports/bench.md (40-50 min on 2 cores; BENCH_ARGS=--no-reproduce)
bench: $(STAMP)
	$(PY) -m benchmarks.run $(BENCH_ARGS)

.PHONY: bench-ksteps
## bench-ksteps: k steps per graph call against its committed prediction, and ours against the blog's code at >= 15 steps per epoch, in interleaved rounds -> reports/ksteps.md (an hour or more on 2 cores: tracing grows with k; KSTEPS_ARGS="--k 1 5 --rounds 4")
bench-ksteps: $(STAMP)
	$(DVC) repro host fetch
	$(PY) -m benchmarks.ksteps --measure $(KSTEPS_ARGS)

# Sharing: results/ (rounds, terms), reports/metrics.json and reports/plots/ travel with git (and `dvc exp push`);
# the data, the report and its figures are in DVC's cache and travel with `dvc push` / `dvc pull`.
# The remote is opt-in: the first `make push` or `make pull` adds DVC_REMOTE (a directory) as this
# clone's default remote in .dvc/config.local, unless a remote is configured already (S3, GCS, SSH:
# docs/pipeline.md, "Sharing results: DVC remotes").
DVC_REMOTE ?= $(HOME)/.local/share/flowerbench/dvc-remote
# Moving data needs DVC, not an up-to-date venv: build the venv only when there is none.
NEED_DVC := $(if $(wildcard $(DVC)),,$(STAMP))
define REMOTE_SETUP
	@if [ -z "$$($(DVC) remote list)" ]; then \
	  $(DVC) remote add --local --default local "$(abspath $(DVC_REMOTE))" && \
	  echo "flowerbench: DVC remote 'local' = $(abspath $(DVC_REMOTE)) (.dvc/config.local)"; fi
endef

.PHONY: push
## push: upload DVC-cached outputs (data, report, figures) to the DVC remote (DVC_REMOTE=dir on first use)
push: $(NEED_DVC)
	$(REMOTE_SETUP)
	$(DVC) push

.PHONY: pull
## pull: download the DVC-cached outputs of this commit from the DVC remote (DVC_REMOTE=dir on first use)
pull: $(NEED_DVC)
	$(REMOTE_SETUP)
	$(DVC) pull

.PHONY: clean
## clean: remove generated results and reports (keeps data/, the venv and reports/reference/)
clean:
	rm -rf results reports/report.md reports/report.html reports/metrics.json reports/plots reports/figures

.PHONY: distclean
## distclean: clean, and remove data/ and the venv
distclean: clean
	rm -rf data/flower_photos data/quarantine data/manifest.json data/downloads $(VENV)
