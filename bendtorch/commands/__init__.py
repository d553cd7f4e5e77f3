"""One module per subcommand of `bendtorch`: `add_arguments(parser)` declares its arguments and `run(args) -> int`
checks them and calls the library function that does the work. A command module imports only
`bendtorch.commands.args` and the standard library's argparse, os, pathlib, sys and typing at its top, so `bendtorch
--help` loads neither numba nor torch."""
