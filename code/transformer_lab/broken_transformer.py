"""A character transformer with three planted bugs, for Week 20's debugging task.

``BrokenPraiseClassifier`` is chapter 4's ``PraiseClassifier`` rebuilt by a hurried colleague:
the same parts and weights, and a ``forward`` with three mistakes that the self-check sees in
students' code every year. Not every one of them raises an error: a model can train, and learn
less than it should. The task is to find each bug from the code and from what training shows,
and to write the repaired forward; the self-check names any bug left in it (its answers are the
instructor's, not in this package).
"""

from __future__ import annotations

import torch
from torch import nn

from transformer_lab.char_transformer import PAD_ID, PraiseClassifier
from transformer_lab.pooling import masked_mean


class BrokenPraiseClassifier(PraiseClassifier):
    """``PraiseClassifier`` with a sequence-first encoder layer (``batch_first=False``: it reads
    (L, N, D)) and a forward with planted bugs. ids (N, L) long -> (N,)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        old = self.encoder.layers[0]
        layer = nn.TransformerEncoderLayer(
            old.self_attn.embed_dim,
            old.self_attn.num_heads,
            old.linear1.out_features,
            dropout=0.0,
            batch_first=False,
        )
        layer.load_state_dict(old.state_dict())  # the same weights, another layout
        self.encoder = nn.TransformerEncoder(
            layer, num_layers=1, enable_nested_tensor=False
        )

    def forward(
        self, ids: torch.Tensor, padding: torch.Tensor | None = None
    ) -> torch.Tensor:
        padding = ids != PAD_ID  # which characters are padding
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1]))[None]  # (N, L, D)
        # The encoder complained that the mask must be (L, N), so the mask was transposed.
        x = self.encoder(x, src_key_padding_mask=padding.T)
        return torch.sigmoid(self.head(masked_mean(x, padding)).squeeze(-1))
