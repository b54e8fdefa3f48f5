#!/usr/bin/env python3
"""repro.py — the entry point of `make reproduce`: the driver is the package
scripts/repro/ (its __init__.py says what it writes and where each part
lives). Kept under this name for the Makefile's rule; `python3 scripts/repro`
is the same."""

import sys

from repro.cli import main  # the package scripts/repro/ (a directory wins over this file)

if __name__ == "__main__":
    sys.exit(main())
