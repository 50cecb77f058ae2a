"""Which flowerbench modules a command runs: the code-derived deps of dvc.yaml's stages, and the code
the rounds' fingerprint covers (measuring.scheduler.fingerprint).

A stage runs `python -m flowerbench.commands.<name>`: the closure starts from the package's
`__init__.py`, `commands/__init__.py` and that command's module, then follows every flowerbench
import (module level or inside a function) of the modules reached, with the `__init__.py` of every
package on the way.  Paths are relative to the package dir (`commands/train.py`,
`training/trainer.py`).
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = "flowerbench"


def _module_file(package_dir: Path, dotted: str) -> str | None:
    """'core.io' -> 'core/io.py', 'commands.train' -> 'commands/train.py', a package -> its __init__.py."""
    base = package_dir.joinpath(*dotted.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.exists():
            return str(cand.relative_to(package_dir))
    return None


def _imported(tree: ast.Module, package_dir: Path, here: str) -> set[str]:
    """The package's module files `tree` (the module at `here`, a path under the package) imports."""
    pkg_parts = here.split("/")[:-1]          # the module's own package inside flowerbench
    out: set[str] = set()
    for sub in ast.walk(tree):
        names: list[str] = []
        if isinstance(sub, ast.ImportFrom):
            if sub.level:
                base = pkg_parts[:len(pkg_parts) - (sub.level - 1)] if sub.level > 1 else pkg_parts
                prefix = ".".join(base + ([sub.module] if sub.module else []))
            elif sub.module and sub.module.split(".")[0] == PKG:
                prefix = sub.module.partition(".")[2]
            else:
                continue
            for a in sub.names:   # `from . import x` names modules; `from .x import y` names module x
                names += [f"{prefix}.{a.name}".lstrip("."), prefix]
        elif isinstance(sub, ast.Import):
            names = [a.name.partition(".")[2] for a in sub.names if a.name.startswith(PKG + ".")]
        for n in names:
            if n and (f := _module_file(package_dir, n)):
                out.add(f)
    return out


PACKAGE_DIR = Path(__file__).resolve().parents[1]   # src/flowerbench (this file is core/closure.py)


def closure(package_dir: Path, commands: list[str]) -> set[str]:
    """Module files (relative to the package dir) that `python -m flowerbench.commands.<c>` runs."""
    todo = {f"commands/{c}.py" for c in commands} | {"__init__.py", "commands/__init__.py"}
    seen: set[str] = set()
    while todo:
        mod = todo.pop()
        seen.add(mod)
        parts = mod.split("/")[:-1]          # importing a.b.c runs a/__init__.py and a/b/__init__.py first
        todo |= {"/".join(parts[:i] + ["__init__.py"]) for i in range(1, len(parts) + 1)} - seen
        todo |= _imported(ast.parse((package_dir / mod).read_text()), package_dir, mod) - seen
    return seen
