"""The input-pipeline section: each in-memory-tensors run beside the JPEG run it shadows."""

from __future__ import annotations

from flowerbench.core.render import table
from flowerbench.report.cells import fmt


def input_pipeline(ceiling: list[dict]) -> list[str]:
    b = ["## Input pipeline: real JPEGs vs in-memory tensors"]
    if not ceiling:
        return b + ["No in-memory-tensors variant ran, so there is no input ceiling to compare with. Add one "
                    "with `pipeline: tensors` beside a files variant of the same loop and replicas "
                    "(params.yaml has `single_fit_tensors`)."]
    return b + ["The same model and settings fed from decoded JPEG files and from random in-memory tensors "
                "of the same shape, in the same rounds (real / tensors: paired ratios over rounds). real / tensors near 1.00 means the input pipeline keeps up with "
                "training; well above 1 means the model waits for data (the bench's target is <= 1.05).",
                table(["real variant", "tensors variant", "loop", "replicas", "real s", "tensors s",
                       "real img/s", "tensors img/s", "real / tensors [95% CI]"],
                      [[c["real"], c["tensors"], c["loop"], c["replicas"], fmt(c["real_seconds"]),
                        fmt(c["tensors_seconds"]), fmt(c["real_images_per_second"], ".1f"),
                        fmt(c["tensors_images_per_second"], ".1f"), ratio(c)]
                       for c in ceiling])]


def ratio(c: dict) -> str:
    lo, hi = c["real_over_tensors_ci_low"], c["real_over_tensors_ci_high"]
    return fmt(c["real_over_tensors"], ".3f") + ("" if lo is None else f" [{lo:.3f}-{hi:.3f}]")
