"""`python -m flowerbench fetch [--source ...]`: the flower data -> data/flower_photos, data/manifest.json."""

from flowerbench import entry

HELP = "fetch the flower data into data/flower_photos and write data/manifest.json"


def _run(args, params):
    from flowerbench import fetch

    fetch.run(params, override=args.source)


def parser():
    p = entry.parser("fetch", HELP)
    p.add_argument("--source", choices=["auto", "download", "archive", "synthetic"],
                   help="override data.source for this run")
    return p


def main(argv=None) -> int:
    return entry.run(parser(), _run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
