"""`python -m flowerbench rounds`: the headline variants, held, in Williams blocks -> results/rounds/."""

from flowerbench import entry

HELP = ("measure the headline variants (rounds.headline) in rounds: each its own process, warmed two at a "
        "time, held, and released one timed epoch at a time in a balanced order; host load recorded; resumes "
        "an interrupted run -> results/rounds/")


def _run(args, params):
    from flowerbench import measure

    measure.run(params, params_path=args.params, plan=measure.headline(params))


main, parser = entry.command("rounds", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
