"""The `bendtorch` command: report, erf-sweep, laws, train, bench."""
