"""Classification metrics on logits, and a paired test of two classifiers."""

import math

import torch

from transformer_lab.validation import require_logits_and_labels


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Share of examples classified correctly at logit 0 (= probability 0.5), as a Python float.

    logits (N,) raw scores, labels (N,) in {0, 1}. Thresholding at 0 on the logit scale is the
    same as thresholding the sigmoid at 0.5 — and different from thresholding logits at 0.5.

    Logits and probabilities cannot be told apart from their values: pass logits, or
    ``p - 0.5``. What is refused (empty input, a NaN logit, labels other than 0/1, mismatched
    shapes) is listed in ``validation.require_logits_and_labels``.
    """
    require_logits_and_labels(logits, labels)
    predictions = (logits > 0).to(labels.dtype)
    return (predictions == labels).float().mean().item()


def mcnemar_exact(fixed: int, broken: int) -> float:
    """Two-sided exact McNemar p-value for two classifiers scored on the same examples.

    ``fixed``: examples only the second model gets right; ``broken``: examples only the first
    model gets right (the examples both get right or both get wrong carry no information about
    which is better). Under the null hypothesis that both models are equally accurate, each of
    the ``n = fixed + broken`` discordant examples is a fair coin flip, so the smaller count is
    Binomial(n, 1/2); the p-value doubles its lower tail (capped at 1). ``n = 0`` gives 1.0.
    """
    for name, value in (("fixed", fixed), ("broken", broken)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer count, got {value!r}")
    n = fixed + broken
    if n == 0:
        return 1.0
    smaller = min(fixed, broken)
    tail = sum(math.comb(n, k) for k in range(smaller + 1)) / 2**n
    return min(1.0, 2 * tail)
