"""`python -m bendtorch`: the same command line as `bendtorch`."""

from bendtorch.cli import run_command

if __name__ == "__main__":  # not when a tool imports every module of the package
    run_command()
