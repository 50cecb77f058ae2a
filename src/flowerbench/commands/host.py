"""`python -m flowerbench host`: describe this machine (CPU model, usable cores, GPUs, CUDA build) -> data/host.json."""

from flowerbench import entry

HELP = "describe this machine (CPU model, usable cores, GPUs, CUDA build) in data/host.json"


def _run(args, params):
    from flowerbench import host, paths

    host.run(paths.HOST)


def parser():
    return entry.parser("host", HELP)


def main(argv=None) -> int:
    return entry.run(parser(), _run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
