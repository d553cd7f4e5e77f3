"""One module per subcommand of `bendtorch`: `add_arguments(parser)` declares its arguments and `run(args) -> int`
checks them and calls the library function that does the work. A command module imports only argparse and
`bendtorch.commands.args` at its top, so `bendtorch --help` loads neither numba nor torch."""
