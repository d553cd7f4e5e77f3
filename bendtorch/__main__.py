"""`python -m bendtorch`: the same command line as `bendtorch`."""

import sys

from bendtorch.cli import main

if __name__ == "__main__":  # not when a tool imports every module of the package
    sys.exit(main())
