"""`python -m flowerbench validate`: measure the held-out settings and judge the frozen predictions."""

from flowerbench import entry

HELP = ("measure every heldout.yaml setting in interleaved rounds and judge the committed predictions "
        "(refuses unless predictions/heldout.json is committed and unchanged); writes reports/validation/")


def _run(args, params):
    from flowerbench import validate

    return validate.validate(params, params_path=args.params)   # refused: heldout.FrozenError, exit 3


main, parser = entry.command("validate", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
