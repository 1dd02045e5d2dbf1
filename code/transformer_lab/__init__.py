"""transformer_lab: the one shared package behind the Week 20 chapter.

Importing it puts the process in the book's canonical numeric mode (one thread, fixed CPU
kernels; see ``reproducibility``), so every page, test and starter script computes the same
numbers on any x86-64 machine. Import it before any tensor operation.

The modules, by role. This list is the package's one map (CONTRIBUTING.md points here and adds
where to change what; ``tests/test_docs.py`` fails when a module is missing from it):

- core attention and training: ``attention`` (scaled dot-product attention written out, masks,
  the soft join), ``encoder`` (PyTorch's encoder layer opened up: ``check_heads``, parameter
  counts, per-head weights), ``pooling`` (masked mean), ``metrics`` (accuracy on logits),
  ``training`` (one training loop and its settings check), ``protocol`` (train / validation /
  test splits, early stopping, the sealed test split, paired intervals), ``validation``
  (argument and shape checks that name what was expected and what came);
- chapter experiments: ``set_task`` and ``set_classifier`` (chapters 2-3: the largest-key set
  task and ``SetClassifier``), ``char_transformer`` (chapter 4, ``PraiseClassifier``, with and
  without positions; ``mirrored_pairs``, its test set that only word order decides;
  ``power``, the smallest effect a test of that size can detect), ``tokenizer`` (chapter 5,
  BPE and its costs), ``bakeoff`` (chapter 6,
  ``TabularTransformer`` against trees, a linear model and an MLP on one churn table);
- exercises: ``broken_transformer`` (Week 20's model with planted bugs), ``week20_runs`` and
  ``homework_runs`` (what the two starter scripts run on the student's own functions),
  ``selfcheck`` (``python -m transformer_lab.selfcheck``: runs a student's functions and names
  the likely mistake);
- figures: ``diagrams`` (block diagrams of the architecture), ``explorers`` (the figures a
  reader can move: every state computed when the page runs), ``plotting`` (the figure style);
- data: ``cloudwave`` (the generators of ``data/``: schema, templates, one module per data set,
  build), ``datasets`` (finding ``data/`` and loading each file with clear errors);
- book infrastructure: ``reproducibility`` (seeds and the canonical numeric mode pinned on
  import), ``timing`` (wall-clock times in the one format the page tests mask), ``rechecks``
  (the records of the re-runs too slow for a page, refused once their recipe changes).
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
