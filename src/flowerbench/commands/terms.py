"""`python -m flowerbench terms`: the model's terms on this host -> results/model-terms.json."""

from flowerbench import entry

HELP = ("measure the model's terms on this host (input, step alone and side by side, all-reduce) "
        "and write results/model-terms.json")


def _run(args, params):
    from flowerbench import terms
    from flowerbench.hostlock import measuring

    with measuring(f"terms of {args.params}"):   # the probes time steps: alone on the host
        terms.run(params, params_path=args.params)


main, parser = entry.command("terms", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
