"""transformer_lab: the one shared package behind the Week 20 chapter.

Importing it puts the process in the book's canonical numeric mode (one thread, fixed CPU
kernels; see ``reproducibility``), so every page, test and starter script computes the same
numbers on any x86-64 machine. Import it before any tensor operation.
"""

from transformer_lab.reproducibility import pin_numerics

pin_numerics()

__all__ = ["pin_numerics"]
