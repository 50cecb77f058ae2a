"""`python -m flowerbench ab [--fresh]`: the rounds measured twice (A, B); do the paired ratios agree?"""

from flowerbench.core import entry

HELP = ("measure the rounds again (B) and test whether every paired ratio agrees with A (the committed "
        "results/rounds, or with --fresh a measurement made just before B); writes reports/ab.md")

FLAGS = {
    "--fresh": {"action": "store_true", "help": "measure A now too, then B (default: A = results/rounds)"},
    "--against": {"default": "results/rounds", "help": "A's rounds folder (default: results/rounds)"},
    "--with": {"dest": "with_b", "metavar": "DIR",
               "help": "measure nothing: B = this rounds folder (two committed measurements compared, e.g. a "
                       "reference and results/rounds)"},
    "--split": {"type": int, "metavar": "K", "help": "measure nothing: A = rounds 1..K of --against, B = the "
                                                    "rounds after them (added later with -S rounds.count=N)"},
}


def _run(args, params):
    from pathlib import Path

    from flowerbench.analysis import ab

    from flowerbench.core.config import ParamsError

    if sum((args.split is not None, args.fresh, args.with_b is not None)) > 1:
        raise ParamsError("ab: --split and --with compare rounds already measured and --fresh measures two; "
                          "choose one")
    return ab.run(params, params_path=args.params, fresh=args.fresh, against=Path(args.against),
                  split_at=args.split, with_b=None if args.with_b is None else Path(args.with_b))


main, parser = entry.command("ab", HELP, _run, FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
