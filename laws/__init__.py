"""The laws as properties: hypothesis properties of impl and of the conformance targets (test_*.py, one file per
family of laws) and z3 proofs of the kernels' index arithmetic (proofs.py); `bendtorch laws` runs them and prints the
law table. The unit and integration tests are in tests/."""
