"""`python -m flowerbench launch [--workers N]`: N local workers on 127.0.0.1 with deadlines -> one result."""

from flowerbench import entry

HELP = "start N local workers on 127.0.0.1 with deadlines and gather one result"


def _run(args, params):
    from flowerbench import multiworker

    return multiworker.launch_main(params, workers=args.workers, params_path=args.params)


def parser():
    p = entry.parser("launch", HELP)
    p.add_argument("--workers", type=int, help="number of workers (default: multiworker.workers)")
    return p


def main(argv=None) -> int:
    return entry.run(parser(), _run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
