"""A small set classifier: embed each (key, value) token, optionally let tokens attend to each
other with one encoder layer, average the real tokens, and score the set with an MLP.

Shapes: B sets, L positions, D = ``d_model``, H = ``nhead``. Padding masks: True = padding.
"""

import torch
from torch import nn

from transformer_lab.encoder import check_heads, head_weights
from transformer_lab.pooling import masked_mean
from transformer_lab.set_task import check_sets, largest_key_index
from transformer_lab.validation import require_bool, require_float_tensor, require_int


class SetClassifier(nn.Module):
    """Logit (B,) for 'the value at the largest key is positive', from x (B, L, 2).

    ``use_attention=False`` is the mean-pooling baseline: each token is embedded on its own and
    no token ever sees another before the average, so no token can know whether its key is the
    largest. With attention, one ``nn.TransformerEncoderLayer`` (post-norm, dropout 0) runs first.
    Padded tokens are set to 0 once embedded, so whatever x holds there (even NaN) changes nothing.
    """

    def __init__(self, use_attention: bool = True, d_model: int = 32, nhead: int = 2, d_ff: int = 64):
        super().__init__()
        require_bool("use_attention", use_attention)
        check_heads(d_model, nhead)
        require_int("d_ff", d_ff, minimum=1)
        self.embed = nn.Linear(2, d_model)
        self.encoder = (
            nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=d_ff, dropout=0.0, batch_first=True)
            if use_attention
            else None
        )
        self.head = nn.Sequential(nn.Linear(d_model, d_model), nn.ReLU(), nn.Linear(d_model, 1))

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        """x (B, L, 2), padding (B, L) with True = padding → logits (B,)."""
        h = self.embed_tokens(x, padding)  # (B, L, D), padded tokens set to 0
        if self.encoder is not None:
            h = self.encoder(h, src_key_padding_mask=padding)
        return self.head(masked_mean(h, padding)).squeeze(-1)

    def embed_tokens(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        """Checked x (B, L, 2) → embedded tokens (B, L, D), exactly 0 at padded positions."""
        check_sets(x, padding)
        require_float_tensor("x", x, self.embed.weight.dtype, "the dtype of the model's weights")
        hidden = padding[:, :, None]
        return self.embed(x.masked_fill(hidden, 0.0)).masked_fill(hidden, 0.0)  # no NaN in gradients either

    def attention_weights(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        """Per-head weights (B, H, L, L) the encoder's self-attention uses on x (B, L, 2).

        The layer is post-norm, so its attention reads the embedded tokens directly; recomputing
        the attention on them returns exactly the weights of the forward pass.
        """
        if self.encoder is None:
            raise ValueError("this SetClassifier was built with use_attention=False: it has no attention")
        if self.encoder.norm_first:
            raise ValueError("attention_weights assumes a post-norm encoder layer (norm_first=False)")
        with torch.no_grad():
            embedded = self.embed_tokens(x, padding)
        return head_weights(self.encoder.self_attn, embedded, padding)


def largest_key_attention(model: SetClassifier, x: torch.Tensor, padding: torch.Tensor) -> dict[str, torch.Tensor]:
    """How much attention each set's largest-key token receives, against a uniform spread.

    For every set, averages over its real queries the weight each head puts on the token with the
    largest key. Returns ``{"per_head": (B, H), "uniform": (B,)}`` where ``uniform`` is 1 / length,
    the share every token would get if attention were spread evenly over the real tokens.
    """
    weights = model.attention_weights(x, padding)  # (B, H, L, L): query rows, key columns
    winner = largest_key_index(x, padding)  # (B,)
    batch = torch.arange(x.shape[0])
    on_winner = weights[batch, :, :, winner]  # (B, H, L): every query's weight on the winner
    real_queries = (~padding).to(weights.dtype)  # (B, L)
    lengths = real_queries.sum(dim=1)  # (B,)
    per_head = (on_winner * real_queries[:, None, :]).sum(dim=-1) / lengths[:, None]
    return {"per_head": per_head, "uniform": 1.0 / lengths}
