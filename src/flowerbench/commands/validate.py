"""`python -m flowerbench validate`: measure the held-out settings and judge the frozen predictions."""

from flowerbench.core import entry

HELP = ("measure every heldout.yaml setting in interleaved rounds and judge the committed predictions "
        "(refuses unless predictions/heldout.json is committed and unchanged); writes reports/validation/")

FLAGS = {"--rejudge": {"action": "store_true",
                       "help": "measure nothing: judge the committed validation again by the current rule, from "
                               "its recorded numbers (the predictions must be the ones it judged; the terms are "
                               "not read)"}}


def _run(args, params):
    from flowerbench.perfmodel import validate

    if args.rejudge:
        return validate.rejudge()
    return validate.validate(params, params_path=args.params)   # refused: heldout.FrozenError, exit 3


main, parser = entry.command("validate", HELP, _run, FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
