"""Held-out settings: the model's predictions for settings no multi-replica term was measured at,
frozen in a commit before the runs they predict (docs/model.md, "Held out").

This module is what predict-heldout and validate share, none of it TensorFlow or a measurement:

  heldout.yaml              the settings (their own file: editing one reruns no DVC stage, and the
                            terms stage never reads it), the rounds and the tolerance
  load(path)                that file, validated (unknown keys are errors, as in params.yaml)
  overrides(setting)        the -S style params a setting changes (data.*, train.*)
  predict_setting(...)      one setting's prediction with its interval: the CPU form with the
                            reference terms carried over (contention, all-reduce, dispatch) and
                            the setting's own one-replica step and input rate
  setting_params, workspace a setting's params.yaml and its workspace (.dvc/tmp/heldout/<name>/),
                            with its data; run_in runs a command there
  frozen(path)              the predictions file's sha256 and the commit that holds it, or
                            FrozenError when it is untracked, changed, or not committed at HEAD
  summary(rows)             the judged predictions (validate's rows) aggregated as the report's
                            own (judge.scorecard), with the targets they are read against

The interval of a prediction is the range of the CPU form over the terms' own 95 % intervals,
every term at the extreme that moves the total the same way (the form is monotone in each):
wider than a propagated interval, so a conservative one.  Nothing measured after the file is
committed may change it; the command that measures the held-out settings refuses to run unless
frozen() holds, and writes its sha256 and commit into each result.
"""

from __future__ import annotations

import copy
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flowerbench.core import paths
from flowerbench.core.io import atomic_write
from flowerbench.core.records import yaml_position
from flowerbench.core.render import table
from flowerbench.perfmodel.forms import cpu_seconds
from flowerbench.perfmodel.judge import MAE_TARGET_PCT, MAX_TARGET_PCT, UNDETERMINED, scorecard
from flowerbench.perfmodel.termsfile import Terms

PREDICTIONS_SCHEMA = 1
PREDICTIONS = Path("predictions") / "heldout.json"                 # `make predict-heldout`, committed before
VALIDATION = Path("reports") / "validation" / "validation.json"    # `make validate`: the runs that judge them
HELDOUT = Path("heldout.yaml")
WORK = Path(".dvc") / "tmp" / "heldout"       # a workspace per setting
OVERHEADS = ("allreduce", "dispatch")   # the terms N replicas add to one replica's step


class HeldOutError(ValueError):
    """heldout.yaml is missing, not YAML, or not a valid set of settings."""


class FrozenError(RuntimeError):
    """The predictions file is not committed and clean at HEAD (or not made from these inputs)."""
    exit_code = 3   # entry.run's exit code for it: refused, nothing measured


class Setting(BaseModel):
    """One held-out setting: what it changes from params.yaml, and the runs it predicts."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    about: str = ""
    image_size: Optional[int] = Field(None, ge=32, le=512)
    max_images: Optional[int] = Field(None, ge=1)
    batch_size_per_replica: Optional[int] = Field(None, ge=1, le=1024)
    scaling: Optional[Literal["weak", "strong"]] = None
    cache: Optional[bool] = None
    standin_px: Optional[int] = Field(None, ge=8, le=512)
    loops: tuple[Literal["fit", "custom"], ...] = ("fit", "custom")


class HeldOut(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rounds: int = Field(2, ge=2, le=50)           # interleaved rounds per setting (an interval needs 2)
    tolerance_pct: float = Field(10.0, gt=0, le=100)
    settings: dict[str, Setting] = Field(min_length=1)


def load(path: Path) -> HeldOut:
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise HeldOutError(f"{path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        where = yaml_position(exc)
        raise HeldOutError(f"{path}: not YAML{' at ' + where if where else ''}: "
                           f"{getattr(exc, 'problem', None) or exc}") from None
    try:
        return HeldOut.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise HeldOutError(f"{path}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None


SECTION = {"image_size": "data", "max_images": "data", "cache": "data", "standin_px": "data",
           "batch_size_per_replica": "train", "scaling": "train"}


def overrides(setting: Setting) -> dict[str, object]:
    """The params keys a setting changes, as `dvc exp run -S` would name them."""
    return {f"{SECTION[k]}.{k}": v for k, v in setting.model_dump().items() if k in SECTION and v is not None}


def bracket(iv: Optional[list], median: float) -> tuple[float, float]:
    """A 95 % interval (low, high; either may be None) widened where needed to hold its median."""
    if not iv or iv[0] is None or iv[1] is None:
        return median, median
    return min(iv[0], median), max(iv[1], median)


def predict_setting(terms: Terms, step: tuple[float, float, float], rate: tuple[float, float, float], *,
                    replicas: int, cores_per_replica: int, steps: int, images: int, epochs: int,
                    dispatch: bool) -> dict:
    """One held-out run's timed seconds: the CPU form with the setting's own one-replica step and
    input rate (`step`, `rate`: median, 95 % low, high, from probes at that setting) and the reference
    terms carried over for N replicas: contention, the all-reduce and, for an in-process run, the
    dispatch term.  Returns the point, the conservative interval and the terms in seconds."""
    at = terms.at(replicas)
    a_lo, a_hi = bracket(at.allreduce.interval_seconds, at.allreduce_seconds) if at.allreduce else (0.0, 0.0)
    d = at.dispatch if dispatch else None
    d_mid, d_lo, d_hi = 0.0, 0.0, 0.0
    if d:   # the dispatch term's spread is its whole step's, less the medians it was computed against
        w_lo, w_hi = bracket(d.interval_seconds, d.median_seconds)
        d_mid = d.seconds_beyond_terms
        d_lo, d_hi = d_mid + w_lo - d.median_seconds, d_mid + w_hi - d.median_seconds

    def total(s: float, r: float, ar: float, dd: float) -> dict:
        return cpu_seconds(at, steps=steps, images=images, epochs=epochs, cores_per_replica=cores_per_replica,
                           step_s=s, input_rate_per_core=r, allreduce_s=ar, dispatch_s=dd)

    mid = total(step[0], rate[0], at.allreduce_seconds, d_mid)
    low = total(step[1], rate[2], a_lo, max(0.0, d_lo))     # fastest: short step, fast input
    high = total(step[2], rate[1], a_hi, d_hi)
    return {"seconds": mid["seconds"], "low": low["seconds"], "high": high["seconds"],
            "terms_seconds": {k: mid[k] for k in ("compute", "allreduce", "input", "dispatch")},
            "carried": {"contention": at.contention, "allreduce_seconds": at.allreduce_seconds,
                        "dispatch_seconds": d_mid}}


def variants_of(setting: Setting, replicas: int) -> dict[str, dict]:
    """The runs a setting measures: each loop on one replica and on N."""
    out = {}
    for loop in setting.loops:
        out[f"single_{loop}"] = {"loop": loop, "replicas": 1}
        out[f"mirrored_{loop}"] = {"loop": loop, "replicas": replicas}
    return out


def setting_params(base: dict, setting: Setting, replicas: int, rounds: int) -> dict:
    """params.yaml with the setting's keys changed, its runs as the variants, no sweep or multi-worker
    job, and heldout.yaml's rounds.  The data archive (when there is one) stays the repo's."""
    p = copy.deepcopy(base)
    for key, value in overrides(setting).items():
        section, name = key.split(".")
        p.setdefault(section, {})[name] = value
    p["variants"] = variants_of(setting, replicas)
    p["sweep"] = {"replicas": []}
    p["multiworker"] = {"workers": 0}
    p["rounds"] = {**p.get("rounds", {}), "count": rounds}
    p.setdefault("report", {})["baseline"] = f"single_{setting.loops[0]}"
    archive = p.get("data", {}).get("archive_path")
    if archive and Path(archive).exists():
        p["data"]["archive_path"] = str(Path(archive).resolve())
    return p


DATA_KEYS = ("data.standin_px",)   # the keys that change the fetched data itself (the rest apply at load)
DATA_FILES = (paths.FLOWERS, paths.MANIFEST, paths.QUARANTINE)


def own_data(setting: Setting) -> bool:
    """Whether a setting needs data of its own (fetched in its workspace) or reads the repo's."""
    return any(k in DATA_KEYS for k in overrides(setting))


def workspace(name: str, params: dict, setting: Setting) -> Path:
    """.dvc/tmp/heldout/<name>/ with its params.yaml (rewritten only when it changed, so that a rerun
    keeps the rounds it measured), the repo's lock and host description, and its data: the repo's
    (linked) unless the setting changes what is fetched, then its own (`fetch` in the workspace)."""
    ws = WORK / name
    (ws / paths.DATA).mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(params, sort_keys=False)
    f = ws / "params.yaml"
    if not f.is_file() or f.read_text() != text:
        atomic_write(f, text)
    for src, dest in ((Path("requirements.lock"), ws / "requirements.lock"), (paths.HOST, ws / paths.HOST)):
        if src.is_file():
            shutil.copyfile(src, dest)
    for data in DATA_FILES:
        link = ws / data
        if link.is_symlink():
            link.unlink()
        if not own_data(setting):
            if link.exists():
                shutil.rmtree(link) if link.is_dir() else link.unlink()
            if data.exists():
                link.symlink_to(data.resolve())
    if own_data(setting):
        run_in(ws, "fetch")
    return ws


def run_in(ws: Path, *args: str) -> None:
    """`python -m flowerbench ARGS` in the workspace, its output passed through; fails naming it."""
    rc = subprocess.run([sys.executable, "-m", "flowerbench", *args], cwd=ws).returncode
    if rc != 0:
        raise RuntimeError(f"{' '.join(args[:1])} in {ws} failed with exit code {rc}")


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def frozen(path: Path, repo: Path) -> dict:
    """The predictions file's sha256 and the commit that last changed it, when it is tracked and
    committed at HEAD with no change since; FrozenError (naming the fix) otherwise."""
    path, repo = Path(path), Path(repo)
    rel = str(path.resolve().relative_to(repo.resolve()))

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=30)

    if not path.exists():
        raise FrozenError(f"{rel}: no predictions file; write it (make predict-heldout) and commit it first")
    if git("cat-file", "-e", f"HEAD:{rel}").returncode != 0:
        raise FrozenError(f"{rel}: not committed; commit the predictions before measuring what they predict")
    if git("diff", "--quiet", "HEAD", "--", rel).returncode != 0:
        raise FrozenError(f"{rel}: changed since HEAD; commit it (or restore it) before measuring")
    commit = git("log", "-1", "--format=%H", "--", rel).stdout.strip()
    head = git("rev-parse", "HEAD").stdout.strip()
    return {"predictions_sha256": sha256(path), "predictions_commit": commit, "head": head}


def overheads(rows: list[dict], predictions: dict) -> list[dict]:
    """Per setting and loop (by loop, then setting): the share of the predicted epoch that N replicas
    add (all-reduce and dispatch, carried over from the reference), and the measured 1-replica run's
    time (same rounds) over the N-replica time, predicted and measured."""
    out = []
    for r in sorted(rows, key=lambda r: (r["loop"], r["setting"])):
        p = predictions["settings"][r["setting"]]["predictions"][r["loop"]]
        single = r["nulls"]["no_speedup"]["predicted_seconds"]
        out.append({"label": label(r), "share_pct": sum(p["terms_seconds"][k] for k in OVERHEADS) / p["seconds"] * 100.0,
                    "predicted_speedup": single / r["predicted_seconds"],
                    "measured_speedup": single / r["measured_seconds"]})
    return out


def diagnosis(rows: list[dict], predictions: dict) -> list[dict]:
    """Which part missed, after the fact (never a prediction): the setting's one-replica step as the
    frozen prediction used it (the probe's, times the loop's factor) against the step of the 1-replica
    run of the same loop in the same rounds (its seconds over epochs x steps, the cached input
    included), and the N-replica form evaluated again with that measured step, every carried-over
    term (contention, all-reduce, dispatch) and the input term unchanged."""
    out = []
    for r in rows:
        s = predictions["settings"][r["setting"]]
        p = s["predictions"][r["loop"]]
        t, kappa = p["terms_seconds"], p["carried"]["contention"]
        epochs, steps_n = s["epochs"], s["steps_per_epoch"]
        used = t["compute"] / (epochs * steps_n * kappa)
        if s["overrides"].get("train.scaling") == "strong":
            # its 1-replica run steps at the global batch, each replica at 1/N of it: no step of the
            # replica's batch was measured in these rounds, so there is nothing to put in its place
            out.append({"label": label(r), "step_used": used, "step_measured": None})
            continue
        measured = r["nulls"]["no_speedup"]["predicted_seconds"] / (epochs * -(-s["images"] // s["probe"]["batch"]))
        again = epochs * steps_n * kappa * measured + t["allreduce"] + t["input"] + t["dispatch"]
        out.append({"label": label(r), "step_used": used, "step_measured": measured,
                    "step_error_pct": (used / measured - 1) * 100, "again_seconds": again,
                    "again_error_pct": (again / r["measured_seconds"] - 1) * 100})
    return out


def figure_rows(validation: dict, predictions: dict) -> list[dict]:
    """The held-out rows in the shape figures.model_vs_measured draws: the frozen prediction's terms
    stacked (the dispatch term, carried over, on top), the measurement and the null models."""
    out = []
    for r in validation["rows"]:
        p = predictions["settings"][r["setting"]]["predictions"][r["loop"]]
        t = p["terms_seconds"]
        out.append({**r, "variant": label(r), "role": "test", "terms_seconds": t,
                    "predicted_seconds": t["compute"] + t["allreduce"] + t["input"],
                    "predicted_with_dispatch_seconds": p["seconds"]})
    return out


def judged(validation: dict, predictions: dict) -> dict:
    """What the report shows of a validation's rows beside them: the summary, the diagnosis with the
    mean and largest absolute error of the form evaluated again, and the overheads."""
    rows = validation["rows"]
    diag = diagnosis(rows, predictions)
    again = [abs(d["again_error_pct"]) for d in diag if d["step_measured"] is not None]
    return {"summary": summary(rows), "diagnosis": diag, "overheads": overheads(rows, predictions),
            "again_abs_error_pct": None if not again else {"mean": sum(again) / len(again), "max": max(again),
                                                            "runs": len(again)}}


def verdict_words(r: dict) -> str:
    """A row's verdict; an undetermined one with the measured half-width that left it so."""
    if r["verdict"] == UNDETERMINED:
        hw = r["measured_half_width_pct"]
        return "undetermined" + (f" (measured ±{hw:.1f} %)" if hw is not None else " (no interval)")
    return r["verdict"]


def rows_table(rows: list[dict]) -> str:
    """The judged rows as a Markdown table (validation.md and the report's section)."""
    return table(["setting", "loop", "predicted s [interval]", "measured s [95% CI]", "error",
                  "no speed-up / linear: error", "verdict"],
                 [[r["setting"], r["loop"],
                   f"{r['predicted_seconds']:.2f} [{r['predicted_low']:.2f}, {r['predicted_high']:.2f}]",
                   f"{r['measured_seconds']:.2f} " + ("n/a" if r["measured_low"] is None else
                                                     f"[{r['measured_low']:.2f}, {r['measured_high']:.2f}]"),
                   f"{r['error_pct']:+.1f}%", f"{r['nulls']['no_speedup']['error_pct']:+.1f}% / "
                   f"{r['nulls']['linear']['error_pct']:+.1f}%", verdict_words(r)] for r in rows])


def summary_words(v: dict, tolerance_pct: float) -> str:
    """The judged predictions' summary (summary) in words, with the targets (validation.md and the report)."""
    nm = v["null_mae_pct"]
    met = [f"mean absolute error {v['mae_pct']:.1f} % (target <= {MAE_TARGET_PCT:g} %: "
           f"{'met' if v['mae_pct'] <= MAE_TARGET_PCT else 'MISSED'})",
           f"largest {v['max_abs_error_pct']:.1f} % (target <= {MAX_TARGET_PCT:g} %: "
           f"{'met' if v['max_abs_error_pct'] <= MAX_TARGET_PCT else 'MISSED'})"]
    beats = ("The model beats both null models on mean absolute error." if v["beats_nulls"] else
             "The model does NOT beat both null models on mean absolute error.")
    return (f"{v['held']} of {v['predicted']} predictions held within ±{tolerance_pct:g} % of the measured point; missed: "
            f"{', '.join(v['missed']) or 'none'}; undetermined: {', '.join(v['undetermined']) or 'none'}. "
            f"{met[0]}, {met[1]}; null models on the same runs: no speed-up {nm['no_speedup']:.1f} %, linear "
            f"{nm['linear']:.1f} %. {beats}")


def label(r: dict) -> str:
    """A validation row's name: its setting and loop."""
    return f"{r['setting']} {r['loop']}"


def summary(rows: list[dict]) -> dict:
    """The model's mean and largest absolute error against the null models' on the same runs: judge.scorecard
    over the judged rows (validate.judge_setting's, every one a test of the model, named "<setting> <loop>")."""
    return {**scorecard([{**r, "variant": f"{r['setting']} {r['loop']}", "role": "test"} for r in rows]),
            "targets": {"mae_pct": MAE_TARGET_PCT, "max_abs_error_pct": MAX_TARGET_PCT}}


def when(validation: dict) -> str:
    """When and at which code the held-out rounds ran, and when they were judged (a rerun of
    `make validate` keeps the rounds it measured and judges them again)."""
    def utc(stamp: str) -> str:
        return stamp[:16].replace("T", " ")

    commits = ", ".join(c[:12] for c in validation["measured_commits"])
    return (f"measured {utc(validation['measured_from'])} to {utc(validation['measured_to'])} UTC at commit "
            f"{commits}, judged {utc(validation['judged_at'])} UTC at HEAD {validation['frozen']['head'][:12]}")
