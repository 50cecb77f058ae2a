"""`python -m flowerbench worker`: one MultiWorkerMirroredStrategy worker configured by TF_CONFIG
(what `launch`, Slurm and Kubernetes start: deploy/)."""

from flowerbench import entry

HELP = "run one MultiWorkerMirroredStrategy worker configured by TF_CONFIG"


def _run(args, params):
    from flowerbench import multiworker

    return multiworker.worker_main(params, variant_name=args.variant, out=args.out)


def parser():
    p = entry.parser("worker", HELP)
    p.add_argument("--variant", default="multiworker_custom")
    p.add_argument("--out", help="where the chief writes its result JSON (the launcher sets it)")
    return p


def main(argv=None) -> int:
    return entry.run(parser(), _run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
