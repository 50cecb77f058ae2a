"""The model's two forms of a data-parallel epoch, defined here once (docs/model.md).  Every caller
(the predictions judged in the report, the held-out settings, the k-steps what-if, the blog
explained) computes its seconds through these.

  CPU form (input, compute and all-reduce share the same cores: their times add)
      T = S x (kappa_N x s + a_N)  +  n / (rho x N x c)   [+ the dispatch term d_N per graph call]
  GPU form (CPU decodes while the GPUs compute: the slower one bounds the epoch)
      T = max(n / rho_host,  S x (s + a_N))

S steps and n images per epoch, s one replica's step alone, kappa_N contention, a_N the all-reduce
per step, rho input images/s per core, c cores per replica, N replicas (termsfile.AtReplicas: the
terms at N, looked up once).
"""

from __future__ import annotations

from typing import Optional

from flowerbench.perfmodel.termsfile import AtReplicas


def cpu_epoch(steps: int, images: int, replicas: int, cores_per_replica: int, step_s: float, contention: float,
              allreduce_s: float, input_rate_per_core: float) -> dict:
    """One epoch's seconds, CPU form: the terms add."""
    parts = {"compute": steps * contention * step_s,
             "allreduce": steps * allreduce_s if replicas > 1 else 0.0,
             "input": images / (input_rate_per_core * replicas * cores_per_replica)}
    return {**parts, "total": sum(parts.values())}


def cpu_seconds(at: AtReplicas, *, steps: int, images: int, epochs: int, cores_per_replica: int, step_s: float,
                input_rate_per_core: float, allreduce_s: Optional[float] = None, dispatch_s: float = 0.0,
                calls_per_epoch: Optional[int] = None) -> dict:
    """`epochs` epochs of an N-replica run (N = at.replicas), CPU form, with the terms `at` carries;
    `allreduce_s` overrides its all-reduce (an end of its interval); the dispatch term `dispatch_s`
    is paid once per graph call (`calls_per_epoch`: one per step unless k steps share a call).
    Returns each term's seconds over the epochs and their sum, "seconds"."""
    e = cpu_epoch(steps, images, at.replicas, cores_per_replica, step_s, at.contention,
                  at.allreduce_seconds if allreduce_s is None else allreduce_s, input_rate_per_core)
    calls = steps if calls_per_epoch is None else calls_per_epoch
    out = {k: epochs * e[k] for k in ("compute", "allreduce", "input")}
    out["dispatch"] = epochs * calls * dispatch_s
    return {**out, "seconds": sum(out.values())}


def gpu_epoch(steps: int, images: int, step_s: float, allreduce_s: float, input_rate: float) -> dict:
    """One epoch's seconds, GPU form: input on the host overlaps compute and all-reduce on the GPUs."""
    device, inp = steps * (step_s + allreduce_s), images / input_rate
    return {"device": device, "input": inp, "total": max(device, inp),
            "bound": "input" if inp > device else "compute + all-reduce"}
