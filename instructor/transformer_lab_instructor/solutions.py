"""The answers as a student would write them: the homework (``SOLUTION``, ``STRETCH``) and Week 20
(``WEEK20``), kept as source text so that the tests and ``make bench`` can write whole files.

Instructor-only: the student edition leaves ``instructor/`` out, and ``tests/test_editions.py``
fingerprints every function below against every file of that edition."""

from __future__ import annotations

SOLUTION = """
import math
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers


def attention(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores.masked_fill(padding[:, None, :], float("-inf")), dim=-1)
    return weights @ v, weights


def masked_mean(x, padding):
    keep = (~padding).unsqueeze(-1).to(x.dtype)
    return (x * keep).sum(1) / keep.sum(1)


def accuracy(logits, labels):
    return ((logits > 0).float() == labels.float()).float().mean().item()


def train_bpe_tokenizer(corpus, vocab_size):
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"])
    tokenizer.train_from_iterator(corpus, trainer)
    return tokenizer


def tokens_per_word(tokenizer, words):
    return {word: len(tokenizer.encode(word).tokens) for word in words}


def embedding_parameters(vocab_size, d):
    return vocab_size * d
"""

STRETCH = """

def causal_padding_mask(padding):
    length = padding.shape[1]
    future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)
    return future[None] | padding[:, None, :]


def multi_head_attention(x, padding, mha):
    b, length, d = x.shape
    h = mha.num_heads
    q, k, v = (x @ mha.in_proj_weight.T + mha.in_proj_bias).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, length, h, d // h).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d // h)).masked_fill(padding[:, None, None, :], float("-inf"))
    weights = torch.softmax(scores, -1)
    out = (weights @ v).transpose(1, 2).reshape(b, length, d)
    return out @ mha.out_proj.weight.T + mha.out_proj.bias, weights
"""


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
