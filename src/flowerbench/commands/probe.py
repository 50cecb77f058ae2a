"""`python -m flowerbench probe KIND --cores 0,1 --batch B`: one term, in this process (run by `terms`)."""

from flowerbench import entry

HELP = "(run by `terms`) measure terms in this process, started on --cores; one JSON line"


def _run(args, params):
    from flowerbench import probes

    cores = [int(c) for c in args.cores.split(",")]
    return probes.main(params, args.kind, cores, args.replicas, args.count, args.batch, args.input_epochs)


def parser():
    p = entry.parser("probe", HELP)
    p.add_argument("kind", choices=["replica", "allreduce", "mirrored"])
    p.add_argument("--cores", required=True, help="comma-separated core ids this process runs on")
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--count", type=int, default=8, help="timed repetitions")
    p.add_argument("--batch", type=int, required=True, help="images per replica per step")
    p.add_argument("--input-epochs", type=int, default=3, help="timed input epochs of a `solo` replica probe")
    return p


def main(argv=None) -> int:
    return entry.run(parser(), _run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
