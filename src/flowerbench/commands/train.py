"""`python -m flowerbench train --variant NAME`: train one variant -> results/<variant>.json."""

from flowerbench import entry

HELP = "train one variant and write results/<variant>.json"

FLAGS = {
    "--variant": {"required": True, "help": "variant name from params.yaml (variants, sweep)"},
}


def _run(args, params):
    from flowerbench import train

    train.run(params, variant_name=args.variant)


main, parser = entry.command("train", HELP, _run, FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
