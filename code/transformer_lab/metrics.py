"""Classification metrics on logits."""

import torch

from transformer_lab.shapes import describe, require_tensor


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Share of examples classified correctly at logit 0 (= probability 0.5), as a Python float.

    logits (N,) raw scores, labels (N,) in {0, 1}. Thresholding at 0 on the logit scale is the
    same as thresholding the sigmoid at 0.5 — and different from thresholding logits at 0.5.
    """
    require_tensor("logits", logits)
    require_tensor("labels", labels)
    if logits.shape != labels.shape or logits.dim() != 1:
        raise ValueError(
            f"logits and labels should both have shape (N,), got {describe(logits.shape)} "
            f"and {describe(labels.shape)}"
        )
    predictions = (logits > 0).to(labels.dtype)
    return (predictions == labels).float().mean().item()
