"""A finished homework file, and ways to break it, for the tests that check whole files.

One home: ``tools/classroom.py``, which ``make bench`` uses to grade a class of such files."""

from classroom import SOLUTION, STRETCH, with_body, write

__all__ = ["SOLUTION", "STRETCH", "WEEK20", "with_body", "write"]


WEEK20 = """
import math
import torch
from transformer_lab.pooling import masked_mean


def forward_without_positions(model, ids, padding):
    x = model.encoder(model.embed(ids), src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


def toy_weights(embeddings, w_q, w_k):
    q, k = embeddings @ w_q, embeddings @ w_k
    return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1)


def repaired_forward(model, ids, padding):
    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    x = model.encoder(x.transpose(0, 1), src_key_padding_mask=padding).transpose(0, 1)
    return model.head(masked_mean(x, padding)).squeeze(-1)


def encode_with_bpe(tokenizer, texts, length):
    pad = tokenizer.token_to_id("[PAD]")
    rows = [tokenizer.encode(text).ids[:length] for text in texts]
    return torch.tensor([r + [pad] * (length - len(r)) for r in rows], dtype=torch.long)


def sinusoidal_positions(length, d_model):
    angle = torch.arange(length)[:, None] * 10000.0 ** (-torch.arange(0, d_model, 2) / d_model)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


def forward_with_sinusoids(model, ids, padding):
    x = model.embed(ids) + sinusoidal_positions(ids.shape[1], model.embed.embedding_dim)
    x = model.encoder(x, src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)
"""
