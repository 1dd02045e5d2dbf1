"""transformer_lab: the one shared package behind the Week 20 chapter.

Importing it pins PyTorch's thread count so that every page, test and starter script computes the
same numbers on a 2-core CI runner and on a 16-core laptop (see ``reproducibility``).
"""

from transformer_lab.reproducibility import pin_threads

pin_threads()

__all__ = ["pin_threads"]
