"""`python -m flowerbench train --variant NAME`: train one variant -> results/<variant>.json."""

from flowerbench import entry

HELP = "train one variant and write results/<variant>.json"


def _run(args, params):
    from flowerbench import train

    train.run(params, variant_name=args.variant)


def parser():
    p = entry.parser("train", HELP)
    p.add_argument("--variant", required=True, help="variant name from params.yaml (variants, sweep)")
    return p


def main(argv=None) -> int:
    return entry.run(parser(), _run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
