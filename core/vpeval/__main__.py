"""`python -m vpeval` runs the same command line as the `vpeval` script."""

from vpeval.cli import run

run()
