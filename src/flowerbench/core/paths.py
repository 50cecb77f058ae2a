"""Every path the stages read or write, in one place.

All paths are relative to the working directory, which is the repository root
when DVC or the Makefile runs a stage (tests run stages in a temporary copy).
`dvc.yaml` names the same paths as stage outputs; `tests/test_dvc.py`
checks that the two agree.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path("data")
FLOWERS = DATA / "flower_photos"          # the image folder, one sub-folder per class
MANIFEST = DATA / "manifest.json"         # what fetch delivered: source, hashes, counts, quarantine
QUARANTINE = DATA / "quarantine"          # files that failed to decode, moved out of FLOWERS
HOST = DATA / "host.json"                 # the machine the training stages measure (stage `host`)
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png"})  # what counts as an image in FLOWERS
RESULTS = Path("results")                 # the rounds (below) and the model's terms
ROUNDS = RESULTS / "rounds"               # stage `rounds`: r01/<variant>.json ... and schedule.json
SCHEDULE = ROUNDS / "schedule.json"       # the rounds' order, core rotation and the host's load per process
SECONDARY = RESULTS / "secondary"         # stage `secondary`: the same layout, every other variant and its baselines
TERMS = RESULTS / "model-terms.json"       # the model's terms on this host (stage `terms`; no variant name has a -)
REPORTS = Path("reports")
FIGURES = REPORTS / "figures"
REPORT_MD = REPORTS / "report.md"
REPORT_HTML = REPORTS / "report.html"
METRICS = REPORTS / "metrics.json"
PLOTS = REPORTS / "plots"                  # dvc plots data (see dvc.yaml `plots:`)
EPOCHS_PLOT = PLOTS / "epochs.csv"
WARMUP_PLOT = PLOTS / "warmup.csv"
BENCH_JSON = REPORTS / "bench.json"
BENCH_MD = REPORTS / "bench.md"


# What the pipeline itself writes into the git tree (its results, DVC's lock, the data and reports
# folders).  A run that rewrites them has not edited code: provenance leaves them out of git_dirty.
PIPELINE_OUTPUTS = ("dvc.lock", f"{RESULTS}/", f"{REPORTS}/", f"{DATA}/")


def is_pipeline_output(path: str) -> bool:
    return path in PIPELINE_OUTPUTS or path.startswith(tuple(p for p in PIPELINE_OUTPUTS if p.endswith("/")))


def result_path(variant: str, results_dir: Path = RESULTS) -> Path:
    """Where `train` / `launch` write a result when no --out is given (a run outside the rounds)."""
    return results_dir / f"{variant}.json"


def round_result(round_no: int, variant: str, rounds_dir: Path = ROUNDS) -> Path:
    """One process's result in the rounds: results/rounds/r01/<variant>.json (1-based rounds)."""
    return rounds_dir / f"r{round_no:02d}" / f"{variant}.json"
