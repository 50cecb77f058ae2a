"""The params schema (pure Python, no TensorFlow)."""

from __future__ import annotations

import pytest

from pydantic import ValidationError

from flowerbench.core.config import Params, ParamsError, load_params, resolved_dict, validate
from flowerbench.training.trainer import batch_sizes
from tests.conftest import tiny_params


def test_defaults_are_the_blogs_variants():
    p = Params()
    assert p.seed == 123 and p.model.arch == "resnet50"
    # the blog's four (its 4 GPUs -> as many core-matched replicas as fit, up to 4), the input
    # ceiling and compute term of each loop, and one replica on the mirrored runs' cores as threads
    assert [(v.name, v.loop, v.replicas, v.cores) for v in p.declared_variants()] == [
        ("single_fit", "fit", 1, None), ("mirrored_fit", "fit", "auto", None), ("single_custom", "custom", 1, None),
        ("mirrored_custom", "custom", "auto", None), ("single_fit_tensors", "fit", 1, None),
        ("single_custom_tensors", "custom", 1, None), ("single_fit_threads", "fit", 1, "auto")]
    assert p.variants["single_fit_tensors"].pipeline == p.variants["single_custom_tensors"].pipeline == "tensors"
    assert p.train.cores_per_replica == 1 and p.multiworker.workers == "auto"


def test_all_variants_expands_the_sweep_and_multiworker():
    p = validate(tiny_params(sweep={"replicas": [2, 8], "loops": ["fit", "custom"]}))
    names = [v.name for v in p.all_variants()]
    assert names[-5:] == ["sweep_r2_fit", "sweep_r2_custom", "sweep_r8_fit", "sweep_r8_custom", "multiworker_custom"]
    assert p.variant("sweep_r8_custom").replicas == 8 and p.variant("multiworker_custom").replicas == 2


def test_the_headline_is_held_apart_and_the_secondary_measures_its_own_baselines():
    """The default study: the blog's four in the headline rounds; every other variant in the secondary
    rounds beside the runs it is compared with (the baseline, and each loop's 1-replica files run),
    never beside a mirrored run.  A headline naming no variant, twice, or a multi-worker job is refused."""
    p = Params()
    assert [v.name for v in p.headline_variants()] == ["single_fit", "mirrored_fit", "single_custom", "mirrored_custom"]
    assert [v.name for v in p.secondary_variants()] == ["single_fit", "single_custom", "single_fit_tensors",
                                                        "single_custom_tensors", "single_fit_threads",
                                                        "multiworker_custom"]
    fit_only = validate(tiny_params(**{"multiworker.workers": 0, "sweep": {"replicas": [2], "loops": ["fit"]}}))
    assert [v.name for v in fit_only.secondary_variants()] == ["single_fit", "sweep_r2_fit"]   # no custom baseline
    assert validate(tiny_params(**{"multiworker.workers": 0})).secondary_variants() == []
    # a params file that declares other variants: the default's absent names are left out, not refused
    other = validate(tiny_params(variants={"single_fit": {"loop": "fit", "replicas": 1},
                                           "quad": {"loop": "fit", "replicas": 4}}))
    assert [v.name for v in other.headline_variants()] == ["single_fit"]
    assert [v.name for v in other.secondary_variants()] == ["single_fit", "quad", "multiworker_custom"]
    for headline, needle in ((["single_fit", "single_fitt"], "rounds.headline: 'single_fitt' names no variant"),
                             (["single_fit", "single_fit"], "rounds.headline: 'single_fit' is listed twice"),
                             (["multiworker_custom"], "rounds.headline: 'multiworker_custom' is a multi-worker job")):
        with pytest.raises(ParamsError, match=needle):
            validate(tiny_params(**{"rounds.headline": headline}))


def test_resolved_params_round_trip():
    p = validate(tiny_params())
    assert validate(resolved_dict(p)) == p


def test_params_are_frozen():
    with pytest.raises(ValidationError, match="frozen"):
        Params().train.epochs = 3  # type: ignore[misc]


@pytest.mark.parametrize("raw,needle", [
    ({"train": {"epochs": True}}, "train.epochs: must be of type int"),
    ({"data": {"max_images": 0}}, "data.max_images: must be >= 1, got 0"),
    ({"sweep": {"replicas": [2, 0]}}, "sweep.replicas: each entry must be between 1 and 64, got 0"),
    ([1, 2], "top level must be a mapping"),
    ({"train": {"custom_steps_per_call": 3, "custom_graph": "epoch"}},
     "train.custom_steps_per_call: 3 steps per call needs train.custom_graph: step"),
    ({"train": {"custom_steps_per_call": 3, "step_timing": True}},
     "train.custom_steps_per_call: 3 steps per call hides the steps inside one graph call"),
    ({"train": {"custom_steps_per_call": 0}}, "train.custom_steps_per_call: must be >= 1, got 0"),
])
def test_validation_messages_name_the_key(raw, needle):
    with pytest.raises(ParamsError) as e:
        validate(raw, "p.yaml")
    assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("scaling,replicas,expected", [("weak", 4, (32, 128)), ("strong", 4, (8, 32)),
                                                      ("weak", 1, (32, 32)), ("strong", 1, (32, 32))])
def test_global_batch_size(scaling, replicas, expected):
    p = validate(tiny_params(**{"train.scaling": scaling, "train.batch_size_per_replica": 32}))
    b = batch_sizes(p, replicas)
    assert (b.batch_size_per_replica, b.global_batch_size) == expected


def test_code_defaults_are_params_yaml():
    """One source of truth: every default of the schema equals params.yaml's value, so a params
    file that omits a key (params-blog.yaml) gets params.yaml's setting, not another one."""
    from flowerbench.core.config import Params, resolved_dict
    from tests.conftest import REPO

    def flat(d, prefix=""):
        out = {}
        for k, v in d.items():
            if isinstance(v, dict) and k != "variants":
                out.update(flat(v, f"{prefix}{k}."))
            else:
                out[prefix + k] = v
        return out

    shipped = flat(resolved_dict(load_params(REPO / "params.yaml")))
    defaults = flat(resolved_dict(Params()))
    assert {k: (defaults[k], v) for k, v in shipped.items() if defaults[k] != v} == {}
    # and params-blog.yaml is an overlay: what it leaves out is params.yaml's
    import yaml

    blog_raw = flat(yaml.safe_load((REPO / "params-blog.yaml").read_text()))
    blog = flat(resolved_dict(load_params(REPO / "params-blog.yaml")))
    unset = [k for k in shipped if k not in blog_raw and not any(k.startswith(r + ".") for r in blog_raw)]
    assert len(unset) > 10 and all(blog[k] == shipped[k] for k in unset)
