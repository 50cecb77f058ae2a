"""`python -m flowerbench launch [--workers N]`: N local workers on 127.0.0.1 with deadlines -> one result."""

from flowerbench.core import entry

HELP = "start N local workers on 127.0.0.1 with deadlines and gather one result"

FLAGS = {
    "--workers": {"type": int, "help": "number of workers (default: multiworker.workers)"},
    "--out": {"help": "where to write the chief's result (default: results/multiworker_custom.json)"},
}


def _run(args, params):
    from flowerbench.training import multiworker

    return multiworker.launch_main(params, workers=args.workers, params_path=args.params,
                                    out=args.out)


main, parser = entry.command("launch", HELP, _run, FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
