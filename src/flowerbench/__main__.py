"""`python -m flowerbench <stage>`: see cli.py."""

from flowerbench.cli import main

raise SystemExit(main())
