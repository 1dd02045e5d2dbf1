"""The model a Week-20 forward is handed: chapter 4's parts under their names, no forward.

A worker module (it imports only PyTorch): the check sends a :class:`ModelParts` to the worker,
which unpickles it without loading the book. A student's forward reads ``model.embed``,
``model.pos``, ``model.encoder`` and ``model.head`` as it would on the book's model; calling the
model itself, or switching one of its options, does nothing for them, so a pass is their own
forward's work.
"""

from __future__ import annotations

from torch import nn

NO_FORWARD = (
    "the check's model has no forward of its own: write the forward from its parts "
    "(model.embed, model.pos, model.encoder, model.head)"
)


class ModelParts(nn.Module):
    """``embed`` (nn.Embedding), ``pos`` (nn.Embedding), ``encoder`` (nn.TransformerEncoder) and
    ``head`` (nn.Linear) of a chapter-4 model; ``model(...)`` raises."""

    def __init__(
        self, embed: nn.Module, pos: nn.Module, encoder: nn.Module, head: nn.Module
    ):
        super().__init__()
        self.embed, self.pos, self.encoder, self.head = embed, pos, encoder, head

    def forward(self, *args, **kwargs):
        raise TypeError(NO_FORWARD)
