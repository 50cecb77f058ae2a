"""`python -m flowerbench secondary`: every other variant beside its baselines -> results/secondary/."""

from flowerbench.core import entry
from flowerbench.measuring import scheduler

HELP = ("measure every variant outside rounds.headline (input twins, threads, multi-worker, sweep) beside the "
        "baselines it is compared with, in sequential rounds of their own; resumes -> results/secondary/")
main, parser = entry.command("secondary", HELP, scheduler.stage(scheduler.secondary))

if __name__ == "__main__":
    raise SystemExit(main())
