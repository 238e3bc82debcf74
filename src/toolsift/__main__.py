"""``python -m toolsift``: the command line (same as the ``toolsift`` script)."""

from .cli import main

raise SystemExit(main())
