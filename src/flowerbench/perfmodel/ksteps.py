"""The k-steps what-if: k training steps per graph call of the custom loop, predicted from the terms
before it is built (benchmarks/ksteps.py measures it against this prediction)."""

from __future__ import annotations

from flowerbench.perfmodel.forms import cpu_seconds
from flowerbench.perfmodel.termsfile import Terms


def ksteps(terms: Terms, step_s: float, *, replicas: int, cores_per_replica: int, steps: int, images: int,
           epochs: int, input_rate: float, ks: list[int]) -> dict:
    """The compute, all-reduce and input terms as now, the dispatch term (the host's work of driving N
    replicas through one call) paid once per call, so S/k times an epoch instead of S.  For the
    unrolled form (k copies of the step traced into one tf.function; trace time x k); a tf.range
    loop would be the graph while-loop that ran 2.7x slower on one CPU replica, which this form does
    not predict.  k must divide the steps per epoch."""
    bad = [k for k in ks if k < 1 or steps % k]
    if bad:
        raise ValueError(f"k must divide the {steps} steps per epoch; {bad} do not")
    at = terms.at(replicas)
    d = at.dispatch_seconds
    out = {}
    for k in ks:
        run = cpu_seconds(at, steps=steps, images=images, epochs=epochs, cores_per_replica=cores_per_replica,
                          step_s=step_s, input_rate_per_core=input_rate, dispatch_s=d, calls_per_epoch=steps // k)
        out[str(k)] = {"seconds": run["seconds"], "calls_per_epoch": steps // k, "dispatch_seconds": run["dispatch"]}
    one = out[str(min(ks))]["seconds"]
    for v in out.values():
        v["over_smallest_k"] = v["seconds"] / one
    return {"dispatch_per_call_seconds": d, "steps_per_epoch": steps, "epochs": epochs, "by_k": out}
