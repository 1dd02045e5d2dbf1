"""Seeds and thread counts: the two things that make printed numbers repeat.

Floating-point sums are not associative, so PyTorch gives slightly different results when a
reduction is split over 1 or 2 threads; after a few hundred optimiser steps those differences
grow into visibly different accuracies. The package therefore fixes one thread everywhere.
"""

import random

import numpy as np
import torch

TORCH_THREADS = 1


def pin_threads(threads: int = TORCH_THREADS) -> None:
    """Fix PyTorch's intra-op (and, when still possible, inter-op) thread counts."""
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        # Inter-op threads can only be set before the first parallel operation; a caller that
        # imported torch and already ran work keeps its setting, intra-op is what matters here.
        pass


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and PyTorch; return a fresh ``torch.Generator`` seeded the same way."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)
