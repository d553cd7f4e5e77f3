"""What every layer of the harness shares, at the bottom of the package (it imports nothing of the project): the
one way to write a file (durable), the machine record (machine), where default outputs and caches go (paths), bounded reading of files (files), the JSON
Schemas of the documents the commands write (schemas), and the records that describe each op, sweep function,
sweep library, conformance target and optimizer once, for every command, test and report to read."""
