"""Which flowerbench modules each DVC stage's command runs: the code-derived deps of dvc.yaml.

`cli.py` imports every stage lazily inside its subcommand handler, so a naive import closure of
cli.py would make every stage depend on everything.  Here the closure starts from the package's
entry (`__main__`, `__init__`, cli.py's module-level imports) plus the one handler the stage's
subcommand dispatches to, then follows every flowerbench import (module level or inside a
function) of the modules reached.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = "flowerbench"


def _imported_modules(nodes, package_dir: Path) -> set[str]:
    out = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.ImportFrom):
                if sub.level == 1 and sub.module is None:      # from . import train
                    out |= {a.name for a in sub.names}
                elif sub.level == 1:                            # from .config import X
                    out.add(sub.module.split(".")[0])
                elif sub.module and sub.module.split(".")[0] == PKG:
                    parts = sub.module.split(".")
                    out |= {parts[1]} if len(parts) > 1 else {a.name for a in sub.names}
            elif isinstance(sub, ast.Import):
                out |= {a.name.split(".")[1] for a in sub.names if a.name.startswith(PKG + ".")}
    return {m for m in out if (package_dir / f"{m}.py").exists()}


def _tree(package_dir: Path, module: str) -> ast.Module:
    return ast.parse((package_dir / f"{module}.py").read_text())


def handlers(package_dir: Path) -> dict[str, str]:
    """subcommand -> the name of its handler function in cli.py (from `add("name", ..., _cmd_x)`)."""
    out = {}
    for node in ast.walk(_tree(package_dir, "cli")):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "add" and len(node.args) == 3:
            name, _, func = node.args
            out[name.value] = func.id
    return out


def closure(package_dir: Path, subcommands: list[str]) -> set[str]:
    """Module files (relative to the package dir) that `python -m flowerbench <subcommand>` runs."""
    cli = _tree(package_dir, "cli")
    by_handler = {f.name: f for f in cli.body if isinstance(f, ast.FunctionDef)}
    top_level = [n for n in cli.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    # The functions every subcommand runs: main() and what it calls in cli.py itself.
    todo = _imported_modules(top_level, package_dir)
    todo |= _imported_modules([by_handler["main"], by_handler["build_parser"]], package_dir)
    for sub in subcommands:
        todo |= _imported_modules([by_handler[handlers(package_dir)[sub]]], package_dir)
        # helpers of cli.py that the handler calls (tensorflow_env, ...) live in cli.py itself
    seen = {"__init__", "__main__", "cli"}
    todo -= seen
    while todo:
        mod = todo.pop()
        seen.add(mod)
        todo |= _imported_modules([_tree(package_dir, mod)], package_dir) - seen
    return {f"{m}.py" for m in seen}
