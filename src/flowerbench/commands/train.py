"""`python -m flowerbench train --variant NAME [--out PATH]`: train one variant -> one result."""

from flowerbench.core import entry

HELP = "train one variant in this process and write its result (the rounds stage runs one per round)"

FLAGS = {
    "--variant": {"required": True, "help": "variant name from params.yaml (variants, sweep)"},
    "--out": {"help": "where to write the result (default: results/<variant>.json)"},
    "--first-core": {"type": int, "default": 0, "help": "start the core list at this position (rotation)"},
}


def _run(args, params):
    from flowerbench.training import process as train

    train.run(params, variant_name=args.variant, out=args.out, first_core=args.first_core)


main, parser = entry.command("train", HELP, _run, FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
