"""impl: BendTorch in float32 Python (exports are added once every module has landed)."""
