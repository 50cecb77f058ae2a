"""`python -m flowerbench terms`: the model's terms on this host -> results/model-terms.json."""

from flowerbench.core import entry

HELP = ("measure the model's terms on this host (input, step alone and side by side, all-reduce) "
        "and write results/model-terms.json")


def _run(args, params):
    from flowerbench.perfmodel import terms

    terms.run(params, params_path=args.params)   # alone on the host: it takes the measurement lock


main, parser = entry.command("terms", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
