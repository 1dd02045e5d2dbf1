"""Week 20 homework: the functions you write, and the settings you change (CAPITALS).

Run from the repository root:

    python exercises/homework/starter.py            # self-check, then every exercise's example
    python exercises/homework/starter.py --train    # Exercise 6: train on your functions
    python -m transformer_lab.selfcheck             # the self-check alone (checks this file)

Replace each ``raise NotImplementedError(...)`` with your code, in order (Exercise 1 first);
Exercises 11 and 12 are stretch exercises. Do not import the answers from ``transformer_lab``.
The exercise page says what each exercise asks: exercises/homework/index.md.
"""

import sys

import torch  # noqa: F401  (your code uses it)
from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: F401  (Exercise 8)
from torch import nn  # noqa: F401  (Exercise 12)

# Exercise 4: change one setting at a time, run again, and explain what changed.
NUM_HEADS = 2  # try 4
HEAD = 0  # which head to print; try another one
USE_PADDING_MASK = True  # try False

# Exercise 6: change exactly ONE of these, record it and its validation accuracy.
# These defaults are chapter 3's recipe (training stops early on the validation loss).
PATIENCE = None  # None: chapter 3's patience (the run prints it); or a number of epochs
LEARNING_RATE = 2e-2
TRAIN_HEADS = 2

# --- Exercise 1 ----------------------------------------------------------------------------------


def accuracy(logits, labels):
    """Share of examples classified correctly, as a Python float.

    logits (N,) raw scores (a logit of 0 is a probability of 0.5), labels (N,) in {0, 1}.
    """
    raise NotImplementedError(
        "Exercise 1 (accuracy): threshold the logits, compare, average, return a float"
    )


# --- Exercise 2 ----------------------------------------------------------------------------------


def masked_mean(x, padding):
    """Average the real tokens of each example: x (B, L, D), padding (B, L) True = padding -> (B, D).

    Leave padded tokens out of both the sum and the count. Every example has a real token.
    """
    raise NotImplementedError(
        "Exercise 2 (masked_mean): mask, sum over the tokens, divide by the real count"
    )


# --- Exercise 3 ----------------------------------------------------------------------------------


def attention(q, k, v, padding):
    """Scaled dot-product attention for one head, written by hand.

    q (B, Lq, D), k (B, Lk, D), v (B, Lk, Dv); padding (B, Lk) bool, True = ignore that key.
    Return (output, weights): output (B, Lq, Dv), weights (B, Lq, Lk), each row of weights
    summing to 1. Do not call a ready-made attention function.
    """
    raise NotImplementedError(
        "Exercise 3 (attention): scores, mask with -inf, softmax over the keys, mix the values"
    )


# --- Exercise 7 ----------------------------------------------------------------------------------


def embedding_parameters(vocab_size, d):
    """Trainable parameters of an embedding matrix with ``vocab_size`` rows of width ``d``."""
    raise NotImplementedError(
        "Exercise 7 (embedding_parameters): how many numbers does the table hold?"
    )


# --- Exercise 8 ----------------------------------------------------------------------------------


def train_bpe_tokenizer(corpus, vocab_size):
    """Train and return a BPE ``tokenizers.Tokenizer`` on ``corpus`` (a list of strings).

    Unseen characters must become "[UNK]" instead of vanishing; words are split at whitespace and
    punctuation before BPE merges characters; the vocabulary has ``vocab_size`` tokens, starting
    with the special tokens "[UNK]" and "[PAD]" (in that order).
    """
    raise NotImplementedError(
        "Exercise 8 (train_bpe_tokenizer): model, pre-tokenizer, trainer, train, return"
    )


# --- Exercise 9 ----------------------------------------------------------------------------------


def tokens_per_word(tokenizer, words):
    """Return {word: number of tokens} for each word in ``words``, each word encoded on its own."""
    raise NotImplementedError(
        "Exercise 9 (tokens_per_word): encode each word, count its tokens"
    )


# --- Exercise 11 (stretch) -----------------------------------------------------------------------


def causal_padding_mask(padding):
    """A decoder's mask for a padded batch: padding (B, L) bool, True = padding -> (B, L, L) bool.

    Entry [b, i, j] is True when query i of example b must NOT read key j: key j lies in the
    future (j > i) or key j is padding.
    """
    raise NotImplementedError(
        "Exercise 11 (causal_padding_mask): the future, the padding, either one blocks"
    )


# --- Exercise 12 (stretch) -----------------------------------------------------------------------


def multi_head_attention(x, padding, mha):
    """Self-attention of x (B, L, D) with the weights of ``mha``, by hand: returns
    (output (B, L, D), weights (B, H, L, L)), the weights of every head.

    padding (B, L) bool, True = ignore that key; mha an ``nn.MultiheadAttention(D, H,
    batch_first=True)``. Use ``mha.in_proj_weight``, ``mha.in_proj_bias``, ``mha.num_heads`` and
    ``mha.out_proj``, and your own ``attention`` for every head; never call ``mha`` itself.
    The pair must equal ``mha(x, x, x, key_padding_mask=padding, average_attn_weights=False)``.
    """
    raise NotImplementedError(
        "Exercise 12 (multi_head_attention): project, split the heads, attend, merge, project"
    )


def main(argv=None):
    """Self-check this file, then run every example (the runner is in the package)."""
    from transformer_lab.homework_runs import main as run

    return run(globals(), argv)


if __name__ == "__main__":
    sys.exit(main())
