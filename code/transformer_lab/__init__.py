"""transformer_lab: the one shared package behind the Week 20 chapter.

Importing it puts the process in the book's canonical numeric mode (one thread, fixed CPU
kernels; see ``reproducibility``), so every page, test and starter script computes the same
numbers on any x86-64 machine. Import it before any tensor operation.

The modules, by role (CONTRIBUTING.md adds where to change what):

- core attention and training: ``attention`` (scaled dot-product attention written out, masks,
  the soft join), ``encoder`` (PyTorch's encoder layer opened up, ``check_heads``), ``pooling``
  (masked mean), ``metrics`` (accuracy on logits), ``training`` (one training loop), ``protocol``
  (train / validation / test splits, early stopping, the sealed test split, paired intervals),
  ``validation`` (argument and shape checks);
- chapter experiments: ``set_task`` and ``set_classifier`` (chapters 2-3), ``char_transformer``
  (chapter 4, ``PraiseClassifier``; ``mirrored_pairs``, its test set that only order decides;
  ``power``, the effect a test can detect), ``tokenizer`` (chapter 5, BPE), ``bakeoff`` (chapter 6,
  ``TabularTransformer`` against trees, a linear model and an MLP);
- data: ``cloudwave`` (the generators of ``data/``: schema, templates, one module per data set),
  ``datasets`` (finding ``data/`` and loading it with clear errors);
- book infrastructure: ``reproducibility`` (seeds and the canonical numeric mode), ``timing`` (wall-clock times
  in the format the page tests mask), ``plotting`` (the figure style);
- homework checks: ``selfcheck`` (``python -m transformer_lab.selfcheck``).
"""

import os
import sys

# `python -m transformer_lab.selfcheck grade .` in a folder of student files (random.py,
# inspect.py) must not import them as the standard library: while runpy imports this package it
# has put the working folder first on sys.path (and sys.argv[0] is still "-m").
if sys.argv[:1] == ["-m"] and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from transformer_lab.reproducibility import pin_numerics  # noqa: E402

pin_numerics()

__all__ = ["pin_numerics"]
