"""`python -m flowerbench <stage>`: see cli.py."""

from .cli import main

raise SystemExit(main())
