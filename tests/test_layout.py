"""The package layout is the architecture (README "What is where"): each package imports only the
packages below it, the performance model is imported only by the report and the command modules,
its CPU form is defined once, and the report's sections format: no statistics, no other section."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PKG = REPO / "src" / "flowerbench"
# bottom to top: a package may import its own modules and those of the packages before it
LAYERS = ["core", "data", "training", "measuring", "analysis", "perfmodel", "report", "commands"]
TOP = ("cli.py", "__main__.py", "__init__.py")


def modules() -> dict[str, Path]:
    """'perfmodel/forms.py' -> its path, for every module of the package."""
    return {str(p.relative_to(PKG)): p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}


def _is_module(dotted: str) -> bool:
    base = PKG.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports(path: Path) -> set[str]:
    """The flowerbench modules `path` imports (dotted, below flowerbench), anywhere in it: `from
    flowerbench.a import b` names a.b when b is a module, else a."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        assert not (isinstance(node, ast.ImportFrom) and node.level), f"{path}: relative import"
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "flowerbench":
            base = node.module.partition(".")[2]
            for a in node.names:
                full = f"{base}.{a.name}".strip(".")
                out.add(full if _is_module(full) else base)
        elif isinstance(node, ast.Import):
            out |= {a.name.partition(".")[2] for a in node.names if a.name.startswith("flowerbench.")}
    return out - {""}


def package_of(dotted: str) -> str:
    return dotted.split(".")[0]


def layering_faults(mods: dict[str, Path]) -> list[str]:
    faults = []
    for rel, path in mods.items():
        if rel in TOP:
            continue
        own = LAYERS.index(rel.split("/")[0])
        for dotted in imports(path):
            other = package_of(dotted)
            if other in LAYERS and LAYERS.index(other) > own:
                faults.append(f"{rel} imports {dotted} (above it)")
    return faults


def test_every_module_sits_in_a_package_of_its_concern():
    top = {rel for rel in modules() if "/" not in rel}
    assert top == set(TOP)
    assert {rel.split("/")[0] for rel in modules() if "/" in rel} == set(LAYERS)


def test_no_package_imports_one_above_it():
    assert layering_faults(modules()) == []


def test_the_layering_check_can_fail(tmp_path):
    """A core module that imports the analysis is caught."""
    bad = tmp_path / "core" / "x.py"
    bad.parent.mkdir()
    bad.write_text("from flowerbench.analysis import stats\n")
    assert layering_faults({"core/x.py": bad}) == ["core/x.py imports analysis.stats (above it)"]


def test_only_the_report_and_the_commands_import_the_performance_model():
    outside = sorted(f"{rel} imports {d}" for rel, path in modules().items()
                     if not rel.startswith(("perfmodel/", "report/", "commands/"))
                     for d in imports(path) if package_of(d) == "perfmodel")
    assert outside == []


def test_the_cpu_form_is_defined_once_and_every_prediction_goes_through_it():
    """One function holds the form's arithmetic (forms.cpu_epoch, which forms.cpu_seconds wraps);
    every module that predicts seconds on a CPU host calls cpu_seconds and looks the terms up through
    Terms.at, never by hand."""
    forms = ("cpu_epoch", "cpu_seconds", "gpu_epoch")
    defs = {(rel, n.name) for rel, path in modules().items() for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.FunctionDef) and n.name in forms}
    assert defs == {("perfmodel/forms.py", "cpu_epoch"), ("perfmodel/forms.py", "cpu_seconds"),
                    ("perfmodel/forms.py", "gpu_epoch")}
    for rel in ("perfmodel/judge.py", "perfmodel/heldout.py", "perfmodel/ksteps.py"):
        text = (PKG / rel).read_text()
        assert "cpu_seconds(" in text and ".at(" in text, rel
    for rel, path in modules().items():
        text = path.read_text()
        assert "terms[" not in text and "terms.get(" not in text, rel   # no hand lookups of the terms


@pytest.mark.parametrize("section", sorted(p.name for p in (PKG / "report").glob("*.py")
                                           if p.name not in ("__init__.py", "cells.py", "figures.py")))
def test_a_report_section_formats_and_imports_no_statistics_nor_another_section(section):
    got = imports(PKG / "report" / section)
    assert {d for d in got if package_of(d) == "analysis"} <= {"analysis.metrics"}, got   # the numbers and their words
    assert not any(d.startswith("report.") and d not in ("report.cells",) for d in got), got
