"""numpy float32 as a bendtorch conformance target (target.py) and a float32 exp of its own (exp.py)."""
