"""`python -m flowerbench fetch [--source ...]`: the flower data -> data/flower_photos, data/manifest.json."""

from flowerbench.core import entry

HELP = "fetch the flower data into data/flower_photos and write data/manifest.json"

FLAGS = {
    "--source": {"choices": ["auto", "download", "archive", "synthetic"],
                 "help": "override data.source for this run"},
}


def _run(args, params):
    from flowerbench.data import fetch

    fetch.run(params, override=args.source)


main, parser = entry.command("fetch", HELP, _run, FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
