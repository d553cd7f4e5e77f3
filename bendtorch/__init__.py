"""The `bendtorch` command: report, erf-sweep (and, as they land, laws, train, bench)."""
