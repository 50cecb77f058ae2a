"""`python -m flowerbench worker`: one MultiWorkerMirroredStrategy worker configured by TF_CONFIG
(what `launch`, Slurm and Kubernetes start: deploy/)."""

from flowerbench.core import entry

HELP = "run one MultiWorkerMirroredStrategy worker configured by TF_CONFIG"

FLAGS = {
    "--variant": {"default": "multiworker_custom"},
    "--out": {"help": "where the chief writes its result JSON (the launcher sets it)"},
}


def _run(args, params):
    from flowerbench.training import multiworker

    return multiworker.worker_main(params, variant_name=args.variant, out=args.out)


main, parser = entry.command("worker", HELP, _run, FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
