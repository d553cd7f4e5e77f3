"""`python -m bendtorch`: the same command line as `bendtorch`."""

import sys

from bendtorch.cli import main

sys.exit(main())
