"""The unit and integration tests (not installed): one file per module or feature of the project; tests/reference/
compares impl and PyTorch against the float64 oracle. The laws, as properties, are in laws/; no file name is in
both."""
