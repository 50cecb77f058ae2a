"""`python -m flowerbench secondary`: every other variant beside its baselines -> results/secondary/."""

from flowerbench import entry

HELP = ("measure every variant outside rounds.headline (input twins, threads, multi-worker, sweep) beside the "
        "baselines it is compared with, in sequential rounds of their own; resumes -> results/secondary/")


def _run(args, params):
    from flowerbench import measure

    measure.run(params, params_path=args.params, plan=measure.secondary(params))


main, parser = entry.command("secondary", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
