"""`python -m flowerbench rounds`: the headline variants, held, in Williams blocks -> results/rounds/."""

from flowerbench.core import entry
from flowerbench.measuring import scheduler

HELP = ("measure the headline variants (rounds.headline) in rounds: each its own process, warmed two at a "
        "time, held, and released one timed epoch at a time in a balanced order; host load recorded; resumes "
        "an interrupted run -> results/rounds/")
main, parser = entry.command("rounds", HELP, scheduler.stage(scheduler.headline))

if __name__ == "__main__":
    raise SystemExit(main())
