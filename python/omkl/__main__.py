import sys

from omkl.cli import main

sys.exit(main())
