"""impl (float32) and PyTorch float32 against the float64 oracle, and impl against PyTorch: layers, losses,
attention, optimizers, the Llama, interchange and the report's rows (`*_vs_torch.py` where laws/ holds the laws of the
same subject)."""
