"""`python -m flowerbench predict-heldout`: probe each heldout.yaml setting, predict, write the file to commit."""

from flowerbench.core import entry

HELP = ("predict every heldout.yaml setting from the committed terms and one short probe of a replica alone "
        "at that setting; writes predictions/heldout.json (commit it before `validate`)")


def _run(args, params):
    from flowerbench.perfmodel.predict_heldout import predict_heldout

    predict_heldout(params, params_path=args.params)   # alone on the host: it takes the measurement lock


main, parser = entry.command("predict-heldout", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
