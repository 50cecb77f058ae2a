"""`python -m flowerbench predict-heldout`: probe each heldout.yaml setting, predict, write the file to commit."""

from flowerbench import entry

HELP = ("predict every heldout.yaml setting from the committed terms and one short probe of a replica alone "
        "at that setting; writes predictions/heldout.json (commit it before `validate`)")


def _run(args, params):
    from flowerbench import validate
    from flowerbench.hostlock import measuring

    with measuring(f"held-out probes of {args.params}"):   # the probes time steps: alone on the host
        validate.predict_heldout(params, params_path=args.params)


main, parser = entry.command("predict-heldout", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
