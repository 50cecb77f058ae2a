"""`python -m flowerbench probe KIND --cores 0,1 --batch B`: one term, in this process (run by `terms`)."""

from flowerbench.core import entry

HELP = "(run by `terms`) measure terms in this process, started on --cores; one JSON line"

FLAGS = {
    "kind": {"choices": ["replica", "allreduce", "mirrored"]},
    "--cores": {"required": True, "help": "comma-separated core ids this process runs on"},
    "--replicas": {"type": int, "default": 1},
    "--count": {"type": int, "default": 8, "help": "timed repetitions"},
    "--batch": {"type": int, "required": True, "help": "images per replica per step"},
    "--input-epochs": {"type": int, "default": 3, "help": "timed input epochs of a `solo` replica probe"},
}


def _run(args, params):
    from flowerbench.perfmodel import probes

    cores = [int(c) for c in args.cores.split(",")]
    return probes.main(params, args.kind, cores, args.replicas, args.count, args.batch, args.input_epochs)


main, parser = entry.command("probe", HELP, _run, FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
