"""`python -m flopcast`: the same command line as the `flopcast` script."""

import sys

from .cli import main

sys.exit(main())
