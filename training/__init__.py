"""`bendtorch train`'s driver: a training run of the `tiny` or `smol` Llama (impl.llama) with impl's float32 library.

- options: the run's options (TrainOptions), the optimizer's checked configuration, the flags a checkpoint records
  (every default resolved, so a flag spelled out at its default is the default), the errors a run reports.
- data: the training data, read as a bounded regular file, and its record (SHA-256, size, path) that a checkpoint
  binds.
- memory: what a run will allocate, estimated from the model's shape before anything is allocated, and the check
  against what the process may still allocate.
- run: `prepare` (every check, before any work) and `train` (the locked run: steps, checkpoints, summary, plot).
"""
