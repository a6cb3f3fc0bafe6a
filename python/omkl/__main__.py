import sys

from omkl.cli import run

sys.exit(run())
