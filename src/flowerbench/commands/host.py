"""`python -m flowerbench host`: describe this machine (CPU model, usable cores, GPUs, CUDA build) -> data/host.json."""

from flowerbench.core import entry

HELP = "describe this machine (CPU model, usable cores, GPUs, CUDA build) in data/host.json"


def _run(args, params):
    from flowerbench.core import host, paths

    host.run(paths.HOST)


main, parser = entry.command("host", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
