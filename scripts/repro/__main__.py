"""`python3 scripts/repro` (or `python3 -m repro` with scripts/ on the path)."""

import os
import sys

if __package__ in (None, ""):  # run as a directory: make the package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from repro.cli import main
else:
    from .cli import main

sys.exit(main())
