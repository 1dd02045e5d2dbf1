"""transformer_lab: the one shared package behind the Week 20 chapter.

Importing it pins PyTorch's thread count so that every page, test and starter script computes the
same numbers on a 2-core CI runner and on a 16-core laptop (see ``reproducibility``).

The modules, by role (CONTRIBUTING.md adds where to change what):

- core attention and training: ``attention`` (scaled dot-product attention written out, masks,
  the soft join), ``encoder`` (PyTorch's encoder layer opened up, ``check_heads``), ``pooling``
  (masked mean), ``metrics`` (accuracy on logits), ``training`` (one training loop), ``shapes``
  (argument and shape checks);
- chapter experiments: ``set_task`` and ``set_classifier`` (chapters 2-3), ``char_transformer``
  (chapter 4, ``PraiseClassifier``), ``tokenizer`` (chapter 5, BPE), ``bakeoff`` (chapter 6,
  ``TabularTransformer`` against trees, a linear model and an MLP);
- data: ``cloudwave`` (the generators of ``data/``: schema, templates, one module per data set),
  ``datasets`` (finding ``data/`` and loading it with clear errors);
- book infrastructure: ``reproducibility`` (seeds, the thread pin), ``timing`` (wall-clock times
  in the format the page tests mask), ``plotting`` (the figure style);
- homework checks: ``selfcheck`` (``python -m transformer_lab.selfcheck``).
"""

from transformer_lab.reproducibility import pin_threads

pin_threads()

__all__ = ["pin_threads"]
