"""`python -m flowerbench rounds`: every variant once per round, each its own process -> results/rounds/."""

from flowerbench import entry

HELP = ("measure every variant in interleaved rounds (own process each, order balanced, host load "
        "recorded; resumes an interrupted run) and write results/rounds/")


def _run(args, params):
    from flowerbench import measure

    measure.run(params, params_path=args.params)


main, parser = entry.command("rounds", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
