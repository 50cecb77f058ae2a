"""`python -m flowerbench report`: results/*.json -> reports/ (md, html, figures, metrics, plots)."""

from flowerbench.core import entry

HELP = "render reports/ (md, html, figures, metrics) from results/*.json"


def _run(args, params):
    from flowerbench import report

    report.run(params)


main, parser = entry.command("report", HELP, _run)


if __name__ == "__main__":
    raise SystemExit(main())
