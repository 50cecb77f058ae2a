"""Docs that cannot drift from the code: every relative link in README.md and docs/ resolves (the file,
and the heading its #anchor names), every params key the docs name exists in the params schema, and
README's "What is where" names every module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from flowerbench.core.config import Params
from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SECTIONS = ("seed", "data", "model", "train", "variants", "sweep", "multiworker", "report")
# Keras calls the docs name in code spans, not params keys.
CODE_NAMES = {"model.compile", "model.fit"}
FILE_SUFFIXES = {"md", "html", "json", "py", "png", "yaml", "csv", "lock", "txt", "npz", "tgz", "cff", "toml"}


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def anchors(path: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", path.read_text(), re.M)}


def links(path: Path) -> list[tuple[str, str]]:
    """(target, anchor) of every relative Markdown link and image outside code blocks."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    out = []
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):          # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        out.append((file, anchor))
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_relative_link_resolves(doc):
    broken = []
    for file, anchor in links(doc):
        target = (doc.parent / file).resolve() if file else doc
        if not target.exists():
            broken.append(f"{file}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{file}#{anchor}: no such heading in {target.name}")
    assert broken == []


def _resolves(dotted: str) -> bool:
    """Whether a dotted params key names a field of the schema (any key below a mapping, such as
    `variants.<name>`; nothing below a scalar)."""
    import typing

    node: object = Params
    for part in dotted.split("."):
        if node is dict:                      # inside a mapping: any key
            return True
        if not (isinstance(node, type) and issubclass(node, BaseModel)) or part not in node.model_fields:
            return False
        ann = node.model_fields[part].annotation
        node = dict if typing.get_origin(ann) is dict else ann
    return True


def named_keys(doc: Path) -> set[str]:
    """Dotted params keys named in code spans, code blocks and `-S key=value` arguments."""
    text = doc.read_text()
    spans = re.findall(r"`([^`\n]+)`", text) + re.findall(r"```.*?```", text, re.S)
    keys = set()
    pattern = rf"(?<![\w./$-])((?:{'|'.join(SECTIONS)})\.[a-z_][\w]*(?:\.[a-z_][\w]*)*)(?![\w(])"
    for span in spans:
        for key in re.findall(pattern, span):
            if key.rsplit(".", 1)[-1] not in FILE_SUFFIXES and key not in CODE_NAMES:
                keys.add(key)
    return keys


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_params_key_the_docs_name_exists(doc):
    unknown = sorted(k for k in named_keys(doc) if not _resolves(k))
    assert unknown == []


def test_the_key_check_can_fail():
    assert _resolves("train.batch_size_per_replica") and _resolves("report.scaling_model.gpus")
    assert _resolves("variants.single_fit") and _resolves("data.cache")
    assert not _resolves("train.batch_size") and not _resolves("report.scaling_model.cpus")
    assert not _resolves("data.cache.size")
    assert named_keys_of("run `dvc exp run -S train.epochs=3` and see docs/model.md, `report.md`") == {"train.epochs"}


def named_keys_of(text: str) -> set[str]:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as fh:
        fh.write(text)
    try:
        return named_keys(Path(fh.name))
    finally:
        Path(fh.name).unlink()


def test_readme_what_is_where_names_every_module():
    readme = (REPO / "README.md").read_text()
    where = readme[readme.index("## What is where"):readme.index("## Documentation")]
    pkg = REPO / "src" / "flowerbench"
    packages = {p.name for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in pkg.glob("*.py")} | packages | {
        p.stem for d in packages - {"commands"} for p in (pkg / d).glob("*.py")}
    missing = sorted(m for m in modules - {"__init__", "__main__"} if not re.search(rf"\b{m}\b", where))
    assert missing == []
    # each package's line names it as a folder
    assert all(f"{d}/" in where for d in packages), packages


# params.yaml maps whose keys the user names (variants, the blog's times, ...): documented as a whole
USER_MAPS = {"variants", "report.blog_seconds", "report.blog_claimed_reduction_pct",
             "report.scaling_model.allreduce_seconds_per_step", "report.scaling_model.blog_input_images_per_second"}


def params_keys(d: dict, prefix: str = "") -> list[str]:
    """The dotted keys of params.yaml, recursing into sections but not into the user-named maps."""
    out = []
    for k, v in d.items():
        name = f"{prefix}{k}"
        out += params_keys(v, name + ".") if isinstance(v, dict) and name not in USER_MAPS else [name]
    return out


def test_every_key_of_params_yaml_is_in_docs_params_md():
    import yaml

    doc = (REPO / "docs" / "params.md").read_text()
    keys = params_keys(yaml.safe_load((REPO / "params.yaml").read_text()))
    assert "rounds.order_seed" in keys and "report.blog_seconds" in keys and "variants" in keys
    assert [k for k in keys if f"`{k}`" not in doc] == []
    assert params_keys({"a": {"b": 1, "c": {"d": 2}}, "variants": {"x": {"loop": "fit"}}}) == ["a.b", "a.c.d", "variants"]


def test_every_stage_command_is_in_the_cli_usage():
    from flowerbench import cli

    usage = cli.__doc__
    assert [c for c in cli.STAGE_COMMANDS if f"python -m flowerbench {c}" not in usage] == []
    assert [c for c in cli.TOOLS if f"python -m flowerbench {c}" not in usage] == []


def test_every_stage_command_in_dvc_yaml_is_the_one_docs_pipeline_gives():
    import yaml

    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    table = (REPO / "docs" / "pipeline.md").read_text()
    given = dict(re.findall(r"^\| `(\w+)` \| `([^`]+)`", table, re.M))
    assert set(given) == set(stages)
    assert {name: st["cmd"] for name, st in stages.items()} == given


def test_every_exit_code_the_code_uses_is_in_docs_faults_md():
    """The codes entry.run can return (EXIT_CODES: the `exit_code` of the errors that carry one, the
    signals', 2 for params) and the Makefile's flock code are each named in docs/faults.md."""
    from flowerbench.training import devices
    from flowerbench.core import entry
    from flowerbench.perfmodel import heldout

    used = {0, 1, 2, devices.EXIT_PORT_TAKEN, heldout.FrozenError.exit_code,
            *(rc for rc, _ in entry.STOPPED.values())}
    used |= {int(m) for m in re.findall(r"--conflict-exit-code (\d+)", (REPO / "Makefile").read_text())}
    assert used <= set(entry.EXIT_CODES)
    line = re.search(r"Exit codes[^\n]*(?:\n(?!\n)[^\n]*)*", (REPO / "docs" / "faults.md").read_text()).group(0)
    assert [rc for rc in sorted(entry.EXIT_CODES) if not re.search(rf"\b{rc}\b", line)] == []
