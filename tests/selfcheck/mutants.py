"""A catalogue of student implementations of every graded function: plausible wrong ones, each
with the mistake code the self-check should name, and right ones written unlike the package.

``python tests/selfcheck/mutants.py`` prints the numbers the issue asks for (variants, rejected,
named) and one line per variant that is not named; ``test_mutations.py`` asserts them.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tokenizers import (
    Tokenizer,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)
from torch.nn.functional import scaled_dot_product_attention as sdpa

from transformer_lab.selfcheck import PASSED, RAISED
from transformer_lab.selfcheck.checks.registry import BY_NAME

# Codes that say only *that* something differs, not which mistake it is.
GENERIC_CODES = {
    "weights_differ",
    "output_differs",
    "result_differs",
    "accuracy_differs",
    "counts_differ",
    "vocabulary_differs",
    "parameters_differ",
    "mask_differs",
    "returned_weights_differ",
    "rows_do_not_sum_to_one",
    "weights_not_finite",
    "result_not_finite",
    "weights_shape",
    "output_shape",
    "result_shape",
    "mask_shape",
    "logits_differ",
    "table_differs",
    None,
}


@dataclass(frozen=True)
class Mutant:
    check: str
    function: Callable
    code: (
        str | None
    )  # the mistake the self-check should name; None for a right implementation

    @property
    def label(self) -> str:
        return f"{self.check}:{self.function.__name__}"


WRONG: list[Mutant] = []
RIGHT: list[Mutant] = []


def wrong(check: str, code: str):
    def register(function):
        WRONG.append(Mutant(check, function, code))
        return function

    return register


def right(check: str):
    def register(function):
        RIGHT.append(Mutant(check, function, None))
        return function

    return register


# =============================================================================================
# Exercise 1: attention
# =============================================================================================

INF = float("-inf")


@right("attention")
def attention_masked_fill(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores.masked_fill(padding[:, None, :], INF), dim=-1)
    return weights @ v, weights


@right("attention")
def attention_einsum_where(q, k, v, padding):
    scores = torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5
    scores = torch.where(padding.unsqueeze(1), torch.tensor(INF), scores)
    weights = scores.softmax(-1)
    return torch.einsum("bqk,bkv->bqv", weights, v), weights


@right("attention")
def attention_loop(q, k, v, padding):
    outputs, all_weights = [], []
    for b in range(q.shape[0]):
        keep = ~padding[b]
        weights = torch.zeros(q.shape[1], k.shape[1], dtype=q.dtype)
        weights[:, keep] = torch.softmax(
            q[b] @ k[b, keep].T / math.sqrt(q.shape[-1]), dim=-1
        )
        outputs.append(weights @ v[b])
        all_weights.append(weights)
    return torch.stack(outputs), torch.stack(all_weights)


@right("attention")
def attention_large_negative(q, k, v, padding):
    scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.size(-1))
    weights = F.softmax(scores.masked_fill(padding[:, None, :], -1e9), dim=-1)
    return torch.bmm(weights, v), weights


@right("attention")
def attention_finfo_min(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(padding.unsqueeze(1), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=2)
    return weights @ v, weights


@right("attention")
def attention_additive_mask(q, k, v, padding):
    bias = torch.zeros(padding.shape, dtype=q.dtype).masked_fill(padding, INF)
    weights = torch.softmax(q @ k.mT / math.sqrt(q.shape[-1]) + bias[:, None, :], dim=-1)
    return weights @ v, weights


@right("attention")
def attention_renormalised_after(q, k, v, padding):
    """Zeroing after the softmax *and renormalising* is the same as −∞ before it."""
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    weights = weights.masked_fill(padding[:, None, :], 0.0)
    weights = weights / weights.sum(-1, keepdim=True)
    return weights @ v, weights


@right("attention")
def attention_stable_by_hand(q, k, v, padding):
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, None, :], INF
    )
    exp = torch.exp(scores - scores.amax(-1, keepdim=True))
    weights = exp / exp.sum(-1, keepdim=True)
    return weights @ v, weights


def _attention(q, k, v, padding, divisor=None, dim=-1, fill=INF):
    scores = (
        q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if divisor is None else divisor)
    )
    weights = torch.softmax(scores.masked_fill(padding[:, None, :], fill), dim=dim)
    return weights @ v, weights


@wrong("attention", "weights_differ")
def attention_squared_scores(q, k, v, padding):
    """No table foresees this one: the check still shows the smallest input that goes wrong."""
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])) ** 2
    weights = torch.softmax(scores.masked_fill(padding[:, None, :], INF), dim=-1)
    return weights @ v, weights


@wrong("attention", "no_scaling")
def attention_no_scaling(q, k, v, padding):
    return _attention(q, k, v, padding, divisor=1)


@wrong("attention", "divided_by_d")
def attention_divided_by_d(q, k, v, padding):
    return _attention(q, k, v, padding, divisor=q.shape[-1])


@wrong("attention", "multiplied_by_sqrt_d")
def attention_multiplied(q, k, v, padding):
    return _attention(q, k, v, padding, divisor=1 / math.sqrt(q.shape[-1]))


@wrong("attention", "divided_by_2_sqrt_d")
def attention_two_sqrt_d(q, k, v, padding):
    return _attention(q, k, v, padding, divisor=2 * math.sqrt(q.shape[-1]))


@wrong("attention", "divided_by_half_d")
def attention_power_precedence(q, k, v, padding):
    d = q.shape[-1]
    return _attention(q, k, v, padding, divisor=d**1 / 2)


@wrong("attention", "divided_by_value_width")
def attention_value_width(q, k, v, padding):
    return _attention(q, k, v, padding, divisor=math.sqrt(v.shape[-1]))


@wrong("attention", "wrong_width")
def attention_number_of_queries(q, k, v, padding):
    return _attention(q, k, v, padding, divisor=math.sqrt(q.shape[1]))


@wrong("attention", "wrong_width")
def attention_number_of_keys(q, k, v, padding):
    return _attention(q, k, v, padding, divisor=math.sqrt(k.size(1)))


@wrong("attention", "softmax_over_queries")
def attention_softmax_dim1(q, k, v, padding):
    return _attention(q, k, v, padding, dim=1)


@wrong("attention", "softmax_over_queries")
def attention_softmax_queries_large_negative(q, k, v, padding):
    return _attention(q, k, v, padding, dim=-2, fill=-1e9)


@wrong("attention", "softmax_over_batch")
def attention_softmax_without_dim(q, k, v, padding):
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, None, :], INF
    )
    weights = F.softmax(scores)  # no dim: PyTorch warns and picks dim 0 for a 3-D tensor
    return weights @ v, weights


@wrong("attention", "no_scaling+softmax_over_queries")
def attention_two_mistakes(q, k, v, padding):
    return _attention(q, k, v, padding, divisor=1, dim=1)


@wrong("attention", "relu_normalised")
def attention_relu(q, k, v, padding):
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, None, :], INF
    )
    positive = torch.relu(scores)
    weights = positive / positive.sum(dim=-1, keepdim=True)
    return weights @ v, weights


@wrong("attention", "sigmoid_not_softmax")
def attention_sigmoid(q, k, v, padding):
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, None, :], INF
    )
    weights = torch.sigmoid(scores)
    return weights @ v, weights


@wrong("attention", "normalised_without_exp+mask_with_zero")
def attention_divide_by_sum(q, k, v, padding):
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, None, :], 0.0
    )
    weights = scores / scores.sum(-1, keepdim=True)
    return weights @ v, weights


@wrong("attention", "mask_after_softmax")
def attention_mask_after(q, k, v, padding):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    weights = weights.masked_fill(padding[:, None, :], 0.0)
    return weights @ v, weights


@wrong("attention", "mask_with_zero")
def attention_mask_zero(q, k, v, padding):
    return _attention(q, k, v, padding, fill=0.0)


@wrong("attention", "inverted_mask")
def attention_inverted(q, k, v, padding):
    return _attention(q, k, v, ~padding)


@wrong("attention", "mask_ignored")
def attention_forgot_assignment(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores.masked_fill(padding[:, None, :], INF)  # the masked copy is thrown away
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong("attention", "inf_after_softmax")
def attention_inf_after(q, k, v, padding):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    weights = weights.masked_fill(padding[:, None, :], INF)
    return weights @ v, weights


@wrong("attention", "mask_times_inf")
def attention_mask_times_inf(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + padding[:, None, :] * INF
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong("attention", "scaled_after_softmax")
def attention_scaled_after(q, k, v, padding):
    weights = torch.softmax(
        (q @ k.transpose(-2, -1)).masked_fill(padding[:, None, :], INF), dim=-1
    )
    weights = weights / math.sqrt(q.shape[-1])
    return weights @ v, weights


@wrong("attention", "returned_unmasked_weights")
def attention_returns_unmasked_weights(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    masked = torch.softmax(scores.masked_fill(padding[:, None, :], INF), dim=-1)
    return masked @ v, weights


@wrong("attention", "returned_scores")
def attention_returns_scores(q, k, v, padding):
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, None, :], INF
    )
    return torch.softmax(scores, dim=-1) @ v, scores


@wrong("attention", "output_from_other_weights")
def attention_output_from_unmasked(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores.masked_fill(padding[:, None, :], INF), dim=-1)
    return torch.softmax(scores, dim=-1) @ v, weights


@wrong("attention", "mixed_keys")
def attention_mixes_keys(q, k, v, padding):
    _, weights = attention_masked_fill(q, k, v, padding)
    return weights @ k, weights


@wrong("attention", "weights_transposed")
def attention_k_times_q(q, k, v, padding):
    scores = (k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, :, None], INF
    )
    weights = torch.softmax(scores, dim=1)
    return weights.transpose(1, 2) @ v, weights


@wrong("attention", "returned_only_output")
def attention_output_only(q, k, v, padding):
    return attention_masked_fill(q, k, v, padding)[0]


# The diagnosis returned_only_weights was deleted (no student had met it): the lone weights
# are named by their sibling, a single tensor instead of the pair.
@wrong("attention", "returned_one_tensor")
def attention_weights_only(q, k, v, padding):
    return attention_masked_fill(q, k, v, padding)[1]


@wrong("attention", "swapped_outputs")
def attention_swapped(q, k, v, padding):
    output, weights = attention_masked_fill(q, k, v, padding)
    return weights, output


@wrong("attention", "weights_not_a_tensor")
def attention_numpy_weights(q, k, v, padding):
    output, weights = attention_masked_fill(q, k, v, padding)
    return output, weights.detach().numpy()


@wrong("attention", "softmax_overflow")
def attention_naive_softmax(q, k, v, padding):
    exp = torch.exp(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, None, :], 0.0
    )
    weights = exp / exp.sum(-1, keepdim=True)
    return weights @ v, weights


@wrong("attention", "large_scores_differ")
def attention_clamped_exp(q, k, v, padding):
    # "exp overflows, so cap the scores": right for small scores, equal weights for large ones
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).clamp(max=50.0)
    exp = torch.exp(scores).masked_fill(padding[:, None, :], 0.0)
    weights = exp / exp.sum(-1, keepdim=True)
    return weights @ v, weights


@right("attention")
def attention_stable_detached_max(q, k, v, padding):
    # the shift only keeps exp finite; softmax does not depend on it, so neither does the gradient
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, None, :], INF
    )
    exp = torch.exp(scores - scores.amax(-1, keepdim=True).detach())
    weights = exp / exp.sum(-1, keepdim=True)
    return weights @ v, weights


@wrong("attention", "wrong_gradient")
def attention_detached_normaliser(q, k, v, padding):
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
        padding[:, None, :], INF
    )
    exp = torch.exp(scores - scores.amax(-1, keepdim=True))
    weights = exp / exp.sum(-1, keepdim=True).detach()  # "the sum is only a constant"
    return weights @ v, weights


@wrong("attention", "no_gradient")
def attention_rewrapped(q, k, v, padding):
    output, weights = attention_masked_fill(q, k, v, padding)
    return torch.tensor(output.tolist()), torch.tensor(weights.tolist())


@wrong("attention", "changed_input")
def attention_cleans_values(q, k, v, padding):
    v[padding] = 0.0  # "clean" the padded values: changes the caller's tensor
    return attention_masked_fill(q, k, v, padding)


@wrong("attention", "library_attention")
def attention_fused(q, k, v, padding):
    allowed = ~padding[:, None, :]
    output = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    weights = torch.softmax(
        (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~allowed, INF),
        dim=-1,
    )
    return output, weights


@wrong("attention", "library_attention")
def attention_fused_alias(q, k, v, padding):
    _, weights = attention_masked_fill(q, k, v, padding)
    return sdpa(q, k, v, attn_mask=~padding[:, None, :]), weights


def _hidden_library_call(q, k, v, padding):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=~padding[:, None, :])


@wrong("attention", "library_attention")
def attention_fused_in_a_helper(q, k, v, padding):
    _, weights = attention_masked_fill(q, k, v, padding)
    return _hidden_library_call(q, k, v, padding), weights


# Mistakes no table lists: rejected, but only with a description of the difference.


@wrong("attention", "weights_shape")
def attention_queries_with_queries(q, k, v, padding):
    scores = q @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ v[:, : q.shape[1]], weights


# =============================================================================================
# Exercise 3: masked_mean
# =============================================================================================


@right("masked_mean")
def masked_mean_multiply(x, padding):
    keep = (~padding).unsqueeze(-1).to(x.dtype)
    return (x * keep).sum(1) / keep.sum(1)


@right("masked_mean")
def masked_mean_loop(x, padding):
    return torch.stack([x[b][~padding[b]].mean(0) for b in range(x.shape[0])])


@right("masked_mean")
def masked_mean_masked_fill(x, padding):
    summed = x.masked_fill(padding[:, :, None], 0.0).sum(dim=1)
    return summed / (~padding).sum(dim=1, keepdim=True)


@right("masked_mean")
def masked_mean_nanmean(x, padding):
    return x.masked_fill(padding[:, :, None], float("nan")).nanmean(dim=1)


@right("masked_mean")
def masked_mean_matmul(x, padding):
    keep = (~padding).float()
    return torch.bmm(keep[:, None, :], x)[:, 0] / keep.sum(-1, keepdim=True)


def _total(x, padding):
    return x.masked_fill(padding[:, :, None], 0.0).sum(1)


@wrong("masked_mean", "mean_over_padding")
def masked_mean_plain_mean(x, padding):
    return x.mean(dim=1)


@wrong("masked_mean", "padded_not_zeroed")
def masked_mean_not_zeroed(x, padding):
    return x.sum(1) / (~padding).sum(1, keepdim=True)


@wrong("masked_mean", "divided_by_full_length")
def masked_mean_full_length(x, padding):
    return _total(x, padding) / x.shape[1]


@wrong("masked_mean", "divided_by_longest")
def masked_mean_longest(x, padding):
    return _total(x, padding) / (~padding).sum(1).max()


@wrong("masked_mean", "divided_by_batch_count")
def masked_mean_batch_count(x, padding):
    return _total(x, padding) / (~padding).sum()


@wrong("masked_mean", "integer_division")
def masked_mean_floor_division(x, padding):
    return _total(x, padding) // (~padding).sum(1, keepdim=True)


@wrong("masked_mean", "integer_division")
def masked_mean_truncated_division(x, padding):
    counts = (~padding).sum(1, keepdim=True)
    return torch.div(_total(x, padding), counts, rounding_mode="trunc")


@wrong("masked_mean", "inverted_mask")
def masked_mean_inverted(x, padding):
    keep = padding.unsqueeze(-1).float()
    return (x * keep).sum(1) / keep.sum(1)


@wrong("masked_mean", "sum_not_mean")
def masked_mean_sum(x, padding):
    return _total(x, padding)


@wrong("masked_mean", "divided_by_padding_count")
def masked_mean_padding_count(x, padding):
    return _total(x, padding) / padding.sum(1, keepdim=True)


@wrong("masked_mean", "max_not_mean")
def masked_mean_max(x, padding):
    return x.masked_fill(padding[:, :, None], INF).max(dim=1).values


@wrong("masked_mean", "counts_broadcast_wrong")
def masked_mean_counts_without_keepdim(x, padding):
    return _total(x, padding) / (~padding).sum(1)


@wrong("masked_mean", "kept_dimension")
def masked_mean_keepdim(x, padding):
    keep = (~padding).unsqueeze(-1).float()
    return (x * keep).sum(1, keepdim=True) / keep.sum(1, keepdim=True)


@wrong("masked_mean", "averaged_over_features")
def masked_mean_features(x, padding):
    return x.mean(dim=-1)


@wrong("masked_mean", "pooled_whole_batch")
def masked_mean_whole_batch(x, padding):
    return x[~padding].mean(0)


@wrong("masked_mean", "changed_input")
def masked_mean_in_place(x, padding):
    x[padding] = 0.0
    return x.sum(1) / (~padding).sum(1, keepdim=True)


@wrong("masked_mean", "result_differs")  # not in the table: a median is not a mean
def masked_mean_median(x, padding):
    return torch.stack([x[b][~padding[b]].median(0).values for b in range(x.shape[0])])


@wrong("masked_mean", "wrong_gradient")
def masked_mean_minus_detached_padding(x, padding):
    # sum every row, then take the padded rows' part back out; detached, it still sends them
    # a gradient
    padded = (x * padding.unsqueeze(-1).to(x.dtype)).sum(1).detach()
    return (x.sum(1) - padded) / (~padding).sum(1, keepdim=True)


@wrong("masked_mean", "no_gradient")
def masked_mean_detached(x, padding):
    return masked_mean_multiply(x, padding).detach()


# =============================================================================================
# Exercise 4: accuracy
# =============================================================================================


@right("accuracy")
def accuracy_logit_zero(logits, labels):
    return ((logits > 0).float() == labels).float().mean().item()


@right("accuracy")
def accuracy_sigmoid(logits, labels):
    return float(((torch.sigmoid(logits) > 0.5).long() == labels.long()).float().mean())


@right("accuracy")
def accuracy_round(logits, labels):
    return (torch.round(torch.sigmoid(logits)) == labels).sum().item() / len(labels)


@right("accuracy")
def accuracy_numpy_float64(logits, labels):
    return (
        (logits.numpy() > 0) == labels.numpy()
    ).mean()  # numpy.float64 is a subclass of float


@right("accuracy")
def accuracy_loop(logits, labels):
    correct = sum(int((float(z) >= 0) == bool(y)) for z, y in zip(logits, labels))
    return correct / len(labels)


@wrong("accuracy", "threshold_logits_at_half")
def accuracy_at_half(logits, labels):
    return ((logits > 0.5).float() == labels).float().mean().item()


@wrong("accuracy", "all_positive")
def accuracy_sigmoid_twice(logits, labels):
    probabilities = torch.sigmoid(logits)
    return ((torch.sigmoid(probabilities) > 0.5).float() == labels).float().mean().item()


@wrong("accuracy", "all_positive")
def accuracy_probabilities_at_zero(logits, labels):
    return ((torch.sigmoid(logits) > 0).float() == labels).float().mean().item()


@wrong("accuracy", "percentage")
def accuracy_percent(logits, labels):
    return 100 * accuracy_logit_zero(logits, labels)


@wrong("accuracy", "count_correct")
def accuracy_count(logits, labels):
    return int(((logits > 0).float() == labels).sum())


@wrong("accuracy", "error_rate")
def accuracy_inverted(logits, labels):
    return ((logits < 0).float() == labels).float().mean().item()


@wrong("accuracy", "returned_tensor")
def accuracy_tensor(logits, labels):
    return ((logits > 0).float() == labels).float().mean()


@wrong("accuracy", "returned_tensor")
def accuracy_tensor_at_half(logits, labels):
    return ((logits > 0.5).float() == labels).float().mean()


@wrong("accuracy", "returned_numpy")
def accuracy_numpy32(logits, labels):
    return ((logits > 0).float() == labels).float().mean().numpy()


@wrong("accuracy", "integer_division")
def accuracy_floor_division(logits, labels):
    return int(((logits > 0).float() == labels).sum()) // len(labels)


@wrong("accuracy", "compared_logits_with_labels")
def accuracy_no_threshold(logits, labels):
    return (logits == labels).float().mean().item()


@wrong(
    "accuracy", "accuracy_differs"
)  # not in the table: correct positives over all positives (recall)
def accuracy_over_positives(logits, labels):
    return (
        ((logits > 0).float() == labels) & (labels == 1)
    ).sum().item() / labels.sum().item()


@wrong("accuracy", "rounded_logits")
def accuracy_rounded_logits(logits, labels):
    return (torch.round(logits) == labels).float().mean().item()


# =============================================================================================
# Exercise 6: train_bpe_tokenizer
# =============================================================================================


def bpe(
    corpus,
    vocab_size,
    pre_tokenizer=pre_tokenizers.Whitespace,
    specials=("[UNK]", "[PAD]"),
    unk_token="[UNK]",
    model=models.BPE,
    normalizer=None,
    **trainer_options,
):
    tokenizer = Tokenizer(model(unk_token=unk_token))
    if pre_tokenizer is not None:
        tokenizer.pre_tokenizer = pre_tokenizer()
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    trainer_class = (
        trainers.WordPieceTrainer if model is models.WordPiece else trainers.BpeTrainer
    )
    trainer = trainer_class(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        show_progress=False,
        **trainer_options,
    )
    tokenizer.train_from_iterator(corpus, trainer)
    return tokenizer


@right("train_bpe_tokenizer")
def bpe_as_in_the_exercise(corpus, vocab_size):
    return bpe(corpus, vocab_size)


@right("train_bpe_tokenizer")
def bpe_with_progress_bar(corpus, vocab_size):  # hint 3 of the page leaves show_progress on
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(
        corpus,
        trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"]),
    )
    return tokenizer


@right("train_bpe_tokenizer")
def bpe_trained_in_batches(corpus, vocab_size):
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"], show_progress=False
    )
    tokenizer.train_from_iterator(
        (text for text in corpus), trainer=trainer, length=len(corpus)
    )
    return tokenizer


@wrong("train_bpe_tokenizer", "ignores_vocab_size")
def bpe_hard_coded_size(corpus, vocab_size):
    return bpe(corpus, 80)


@wrong("train_bpe_tokenizer", "ignores_vocab_size")
def bpe_default_size(corpus, vocab_size):
    return bpe(corpus, 30000)


@wrong("train_bpe_tokenizer", "missing_special_tokens")
def bpe_no_specials(corpus, vocab_size):
    return bpe(corpus, vocab_size, specials=())


@wrong("train_bpe_tokenizer", "special_token_ids")
def bpe_specials_swapped(corpus, vocab_size):
    return bpe(corpus, vocab_size, specials=("[PAD]", "[UNK]"))


@wrong("train_bpe_tokenizer", "missing_pre_tokenizer")
def bpe_no_pre_tokenizer(corpus, vocab_size):
    return bpe(corpus, vocab_size, pre_tokenizer=None)


@wrong("train_bpe_tokenizer", "wrong_pre_tokenizer")
def bpe_whitespace_split(corpus, vocab_size):
    return bpe(corpus, vocab_size, pre_tokenizer=pre_tokenizers.WhitespaceSplit)


@wrong("train_bpe_tokenizer", "wrong_pre_tokenizer")
def bpe_byte_level(corpus, vocab_size):
    return bpe(corpus, vocab_size, pre_tokenizer=pre_tokenizers.ByteLevel)


@wrong("train_bpe_tokenizer", "missing_unk_token")
def bpe_without_unk_token(corpus, vocab_size):
    return bpe(corpus, vocab_size, unk_token=None)


@wrong("train_bpe_tokenizer", "wrong_unk_token")
def bpe_pad_as_unk_token(corpus, vocab_size):
    return bpe(corpus, vocab_size, unk_token="[PAD]")


@wrong("train_bpe_tokenizer", "min_frequency")
def bpe_min_frequency(corpus, vocab_size):
    return bpe(corpus, vocab_size, min_frequency=2)


@wrong("train_bpe_tokenizer", "subtracted_special_tokens")
def bpe_size_minus_specials(corpus, vocab_size):
    return bpe(corpus, vocab_size - 2)


@wrong("train_bpe_tokenizer", "no_merges")
def bpe_trained_on_one_string(corpus, vocab_size):
    return bpe(" ".join(corpus), vocab_size)


@wrong("train_bpe_tokenizer", "wrong_model")
def bpe_wordpiece(corpus, vocab_size):
    return bpe(corpus, vocab_size, model=models.WordPiece)


@wrong("train_bpe_tokenizer", "extra_normalizer")
def bpe_lowercase(corpus, vocab_size):
    return bpe(corpus, vocab_size, normalizer=normalizers.Lowercase())


@wrong("train_bpe_tokenizer", "missing_characters")
def bpe_limited_alphabet(corpus, vocab_size):
    return bpe(corpus, vocab_size, limit_alphabet=20)


@wrong("train_bpe_tokenizer", "ignores_corpus")
def bpe_global_corpus(corpus, vocab_size):
    from transformer_lab.tokenizer import TINY_CORPUS

    return bpe(list(TINY_CORPUS), vocab_size)


@wrong("train_bpe_tokenizer", "returned_trainer")
def bpe_returns_trainer(corpus, vocab_size):
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"])
    Tokenizer(models.BPE(unk_token="[UNK]")).train_from_iterator(corpus, trainer)
    return trainer


# The diagnosis returned_model was deleted (no student had met it): the bare model is named
# as not a Tokenizer, and the report shows its type (tokenizers.BPE).
@wrong("train_bpe_tokenizer", "not_a_tokenizer")
def bpe_returns_model(corpus, vocab_size):
    return bpe(corpus, vocab_size).model


@wrong("train_bpe_tokenizer", "untrained")
def bpe_never_trained(corpus, vocab_size):
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


@wrong("train_bpe_tokenizer", "returned_none")
def bpe_no_return(corpus, vocab_size):
    bpe(corpus, vocab_size)


# =============================================================================================
# Exercise 8: tokens_per_word
# =============================================================================================


@right("tokens_per_word")
def tokens_via_tokens(tokenizer, words):
    return {word: len(tokenizer.encode(word).tokens) for word in words}


@right("tokens_per_word")
def tokens_via_len(tokenizer, words):
    return {word: len(tokenizer.encode(word)) for word in words}


@right("tokens_per_word")
def tokens_via_batch(tokenizer, words):
    return {
        word: len(encoding.ids)
        for word, encoding in zip(words, tokenizer.encode_batch(list(words)))
    }


@right("tokens_per_word")
def tokens_via_loop(tokenizer, words):
    counts = {}
    for word in words:
        counts[word] = 0
        for _ in tokenizer.encode(word, add_special_tokens=False).ids:
            counts[word] += 1
    return counts


def _global_tokenizer():
    from transformer_lab.tokenizer import TINY_CORPUS, train_bpe_tokenizer

    return train_bpe_tokenizer(list(TINY_CORPUS), 80)


GLOBAL_TOKENIZER = _global_tokenizer()


@wrong("tokens_per_word", "counts_differ")
def tokens_per_word_long_words_plus_one(tokenizer, words):
    """No table foresees this one: the check names the shortest word that goes wrong."""
    return {w: len(tokenizer.encode(w).tokens) + (len(w) > 6) for w in words}


@wrong("tokens_per_word", "counted_characters")
def tokens_characters(tokenizer, words):
    return {w: len(w) for w in words}


@wrong("tokens_per_word", "returned_list")
def tokens_as_list(tokenizer, words):
    return [len(tokenizer.encode(w).tokens) for w in words]


@wrong("tokens_per_word", "counted_words")
def tokens_words(tokenizer, words):
    return {w: len(w.split()) for w in words}


@wrong("tokens_per_word", "counted_whole_list")
def tokens_whole_list(tokenizer, words):
    return {w: len(tokenizer.encode(" ".join(words)).tokens) for w in words}


@wrong("tokens_per_word", "stored_tokens")
def tokens_lists(tokenizer, words):
    return {w: tokenizer.encode(w).tokens for w in words}


@wrong("tokens_per_word", "stored_token_ids")
def tokens_id_lists(tokenizer, words):
    return {w: tokenizer.encode(w).ids for w in words}


@wrong("tokens_per_word", "stored_token_id")
def tokens_first_id(tokenizer, words):
    return {w: tokenizer.encode(w).ids[0] for w in words}


@wrong("tokens_per_word", "used_token_to_id")
def tokens_token_to_id(tokenizer, words):
    return {w: tokenizer.token_to_id(w) for w in words}


@wrong("tokens_per_word", "counted_distinct_tokens")
def tokens_distinct(tokenizer, words):
    return {w: len(set(tokenizer.encode(w).tokens)) for w in words}


@wrong("tokens_per_word", "guessed_from_vocabulary")
def tokens_guessed(tokenizer, words):
    vocabulary = tokenizer.get_vocab()
    return {w: 1 if w in vocabulary else len(w) for w in words}


@wrong("tokens_per_word", "counted_pieces")
def tokens_pre_tokenizer_pieces(tokenizer, words):
    return {w: len(tokenizer.pre_tokenizer.pre_tokenize_str(w)) for w in words}


@wrong("tokens_per_word", "ignores_tokenizer")
def tokens_global_tokenizer(tokenizer, words):
    return {w: len(GLOBAL_TOKENIZER.encode(w).tokens) for w in words}


@wrong("tokens_per_word", "wrong_keys")
def tokens_token_keys(tokenizer, words):
    return {t: 1 for w in words for t in tokenizer.encode(w).tokens}


# =============================================================================================
# Exercise 9: embedding_parameters
# =============================================================================================


@right("embedding_parameters")
def embedding_product(vocab_size, d):
    return vocab_size * d


@right("embedding_parameters")
def embedding_from_module(vocab_size, d):
    return sum(p.numel() for p in torch.nn.Embedding(vocab_size, d).parameters())


@right("embedding_parameters")
def embedding_prod(vocab_size, d):
    return math.prod((vocab_size, d))


@wrong("embedding_parameters", "parameters_differ")
def embedding_a_scale_per_row(vocab_size, d):
    return vocab_size * d + vocab_size


@wrong("embedding_parameters", "added_not_multiplied")
def embedding_added(vocab_size, d):
    return vocab_size + d


@wrong("embedding_parameters", "counted_a_bias")
def embedding_with_bias(vocab_size, d):
    return vocab_size * d + d


@wrong("embedding_parameters", "width_squared")
def embedding_d_squared(vocab_size, d):
    return d * d


@wrong("embedding_parameters", "vocab_squared")
def embedding_vocab_squared(vocab_size, d):
    return vocab_size**2


@wrong("embedding_parameters", "counted_twice")
def embedding_in_and_out(vocab_size, d):
    return 2 * vocab_size * d


@wrong("embedding_parameters", "counted_bytes")
def embedding_bytes(vocab_size, d):
    return vocab_size * d * 4


@wrong("embedding_parameters", "in_millions")
def embedding_millions(vocab_size, d):
    return vocab_size * d / 1e6


@wrong("embedding_parameters", "not_a_number")
def embedding_tensor(vocab_size, d):
    return torch.tensor(vocab_size * d)


@wrong("embedding_parameters", "not_a_number")
def embedding_text(vocab_size, d):
    return f"{vocab_size * d:,}"


# =============================================================================================
# Stretch: causal_padding_mask
# =============================================================================================


@right("causal_padding_mask")
def mask_triu(padding):
    length = padding.shape[1]
    future = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
    return future.unsqueeze(0) | padding.unsqueeze(1)


@right("causal_padding_mask")
def mask_arange(padding):
    positions = torch.arange(padding.shape[1])
    return (positions[None, None, :] > positions[None, :, None]) | padding[:, None, :]


@right("causal_padding_mask")
def mask_loops(padding):
    batch, length = padding.shape
    mask = torch.zeros(batch, length, length, dtype=torch.bool)
    for b in range(batch):
        for i in range(length):
            for j in range(length):
                mask[b, i, j] = bool(j > i or padding[b, j])
    return mask


@right("causal_padding_mask")
def mask_from_allowed(padding):
    length = padding.shape[1]
    allowed = (
        torch.tril(torch.ones(length, length, dtype=torch.bool))[None]
        & ~padding[:, None, :]
    )
    return ~allowed


@right("causal_padding_mask")
def mask_with_package_causal_mask(padding):
    from transformer_lab.attention import causal_mask

    return (
        causal_mask(padding.shape[1]).expand(padding.shape[0], -1, -1) | padding[:, None, :]
    )


def _future(padding, diagonal=1):
    length = padding.shape[1]
    return torch.ones(length, length, dtype=torch.bool).triu(diagonal)


@wrong("causal_padding_mask", "padding_ignored")
def mask_causal_only(padding):
    return _future(padding).expand(padding.shape[0], -1, -1).clone()


@wrong("causal_padding_mask", "causal_missing")
def mask_padding_only(padding):
    return padding[:, None, :].expand(-1, padding.shape[1], -1).clone()


@wrong("causal_padding_mask", "blocked_diagonal")
def mask_diagonal(padding):
    return _future(padding, diagonal=0)[None] | padding[:, None, :]


@wrong("causal_padding_mask", "causal_transposed")
def mask_tril(padding):
    length = padding.shape[1]
    return torch.ones(length, length, dtype=torch.bool).tril(-1)[None] | padding[:, None, :]


@wrong("causal_padding_mask", "inverted_mask")
def mask_allowed_instead(padding):
    length = padding.shape[1]
    return torch.ones(length, length, dtype=torch.bool).tril()[None] & ~padding[:, None, :]


@wrong("causal_padding_mask", "padding_inverted")
def mask_not_padding(padding):
    return _future(padding)[None] | ~padding[:, None, :]


@wrong("causal_padding_mask", "padding_on_queries")
def mask_query_padding(padding):
    return _future(padding)[None] | padding[:, :, None]


@wrong("causal_padding_mask", "padding_on_both_axes")
def mask_both_axes(padding):
    return _future(padding)[None] | padding[:, None, :] | padding[:, :, None]


@wrong("causal_padding_mask", "combined_with_and")
def mask_and(padding):
    return _future(padding)[None] & padding[:, None, :]


@wrong("causal_padding_mask", "missing_batch_axis")
def mask_no_batch(padding):
    return _future(padding)


@wrong("causal_padding_mask", "additive_float_mask")
def mask_additive(padding):
    blocked = _future(padding)[None] | padding[:, None, :]
    return torch.zeros(blocked.shape).masked_fill(blocked, INF)


@wrong("causal_padding_mask", "not_bool")
def mask_as_integers(padding):
    return (_future(padding)[None] | padding[:, None, :]).long()


# =============================================================================================
# Stretch: multi_head_attention
# =============================================================================================


def _mha(
    x,
    padding,
    mha,
    *,
    split_transpose=True,
    merge_transpose=True,
    divisor=None,
    fill=INF,
    mask_keys=True,
    in_bias=True,
    out_bias=True,
    out_proj=True,
    heads=None,
    dim=-1,
    after=False,
    order="qkv",
):
    b, length, d = x.shape
    h = heads or mha.num_heads
    chunks = F.linear(x, mha.in_proj_weight, mha.in_proj_bias if in_bias else None).chunk(
        3, dim=-1
    )
    q, k, v = (dict(zip(order, chunks))[name] for name in "qkv")

    def split(t):
        return (
            t.view(b, length, h, d // h).transpose(1, 2)
            if split_transpose
            else t.reshape(b, h, length, d // h)
        )

    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(-2, -1) / (math.sqrt(d // h) if divisor is None else divisor)
    mask = padding[:, None, None, :] if mask_keys else padding[:, None, :, None]
    if not after and fill is not None:
        scores = scores.masked_fill(mask, fill)
    weights = torch.softmax(scores, dim=dim)
    if after:
        weights = weights.masked_fill(mask, 0.0)
    mixed = weights @ v
    merged = (
        mixed.transpose(1, 2).reshape(b, length, d)
        if merge_transpose
        else mixed.reshape(b, length, d)
    )
    if not out_proj:
        return merged, weights
    out = F.linear(merged, mha.out_proj.weight, mha.out_proj.bias if out_bias else None)
    return out, weights


@right("multi_head_attention")
def mha_chunked(x, padding, mha):
    return _mha(x, padding, mha)


@right("multi_head_attention")
def mha_sliced_weights(x, padding, mha):
    b, length, d = x.shape
    h, w, bias = mha.num_heads, mha.in_proj_weight, mha.in_proj_bias
    q = x @ w[:d].T + bias[:d]
    k = x @ w[d : 2 * d].T + bias[d : 2 * d]
    v = x @ w[2 * d :].T + bias[2 * d :]
    q, k, v = (t.reshape(b, length, h, d // h).permute(0, 2, 1, 3) for t in (q, k, v))
    scores = torch.einsum("bhqe,bhke->bhqk", q, k) / (d // h) ** 0.5
    weights = scores.masked_fill(padding.view(b, 1, 1, length), -1e9).softmax(-1)
    out = (
        torch.einsum("bhqk,bhke->bhqe", weights, v)
        .permute(0, 2, 1, 3)
        .reshape(b, length, d)
    )
    return out @ mha.out_proj.weight.T + mha.out_proj.bias, weights


@right("multi_head_attention")
def mha_head_by_head(x, padding, mha):
    d, h = x.shape[-1], mha.num_heads
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    width = d // h
    heads = [
        attention_masked_fill(
            q[..., i * width : (i + 1) * width],
            k[..., i * width : (i + 1) * width],
            v[..., i * width : (i + 1) * width],
            padding,
        )
        for i in range(h)
    ]
    return (
        mha.out_proj(torch.cat([out for out, _ in heads], dim=-1)),
        torch.stack([weights for _, weights in heads], dim=1),
    )


@wrong("multi_head_attention", "no_output_projection")
def mha_no_output_projection(x, padding, mha):
    return _mha(x, padding, mha, out_proj=False)


@wrong("multi_head_attention", "heads_split_without_transpose")
def mha_split_reshape(x, padding, mha):
    return _mha(x, padding, mha, split_transpose=False)


@wrong("multi_head_attention", "heads_merged_without_transpose")
def mha_merge_reshape(x, padding, mha):
    return _mha(x, padding, mha, merge_transpose=False)


@wrong("multi_head_attention", "scaled_by_model_width")
def mha_sqrt_model_width(x, padding, mha):
    return _mha(x, padding, mha, divisor=math.sqrt(x.shape[-1]))


@wrong("multi_head_attention", "no_scaling")
def mha_unscaled(x, padding, mha):
    return _mha(x, padding, mha, divisor=1.0)


@wrong("multi_head_attention", "single_head")
def mha_one_head(x, padding, mha):
    return _mha(x, padding, mha, heads=1)


@wrong("multi_head_attention", "mask_ignored")
def mha_no_mask(x, padding, mha):
    return _mha(x, padding, mha, fill=None)


@wrong("multi_head_attention", "inverted_mask")
def mha_inverted_mask(x, padding, mha):
    return _mha(x, ~padding, mha)


@wrong("multi_head_attention", "mask_after_softmax")
def mha_mask_after(x, padding, mha):
    return _mha(x, padding, mha, after=True)


@wrong("multi_head_attention", "mask_on_queries")
def mha_query_mask(x, padding, mha):
    return _mha(x, padding, mha, mask_keys=False)


@wrong("multi_head_attention", "softmax_over_queries")
def mha_softmax_queries(x, padding, mha):
    return _mha(x, padding, mha, dim=-2, fill=-1e9)


@wrong("multi_head_attention", "in_proj_bias_ignored")
def mha_no_in_bias(x, padding, mha):
    return _mha(x, padding, mha, in_bias=False)


@wrong("multi_head_attention", "out_proj_bias_ignored")
def mha_no_out_bias(x, padding, mha):
    return _mha(x, padding, mha, out_bias=False)


@wrong("multi_head_attention", "biases_ignored")
def mha_no_biases(x, padding, mha):
    return _mha(x, padding, mha, in_bias=False, out_bias=False)


@wrong("multi_head_attention", "padding_tiled_by_example")
def mha_padding_repeated(x, padding, mha):
    """Heads folded into the batch (b·H + h) and the student's own attention per head, with the
    mask tiled by repeat instead of repeat_interleave."""
    b, length, d = x.shape
    h = mha.num_heads
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)

    def fold(t):
        return (
            t.reshape(b, length, h, d // h).transpose(1, 2).reshape(b * h, length, d // h)
        )

    out, _ = _attention(fold(q), fold(k), fold(v), padding.repeat(h, 1))
    merged = out.reshape(b, h, length, d // h).transpose(1, 2).reshape(b, length, d)
    return F.linear(merged, mha.out_proj.weight, mha.out_proj.bias)


@right("multi_head_attention")
def mha_padding_repeat_interleaved(x, padding, mha):
    b, length, d = x.shape
    h = mha.num_heads
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)

    def fold(t):
        return (
            t.reshape(b, length, h, d // h).transpose(1, 2).reshape(b * h, length, d // h)
        )

    out, weights = _attention(
        fold(q), fold(k), fold(v), padding.repeat_interleave(h, dim=0)
    )
    merged = out.reshape(b, h, length, d // h).transpose(1, 2).reshape(b, length, d)
    return (
        F.linear(merged, mha.out_proj.weight, mha.out_proj.bias),
        weights.reshape(b, h, length, length),
    )


@wrong("multi_head_attention", "weights_heads_folded")
def mha_weights_left_folded(x, padding, mha):
    b, length, d = x.shape
    h = mha.num_heads
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)

    def fold(t):
        return (
            t.reshape(b, length, h, d // h).transpose(1, 2).reshape(b * h, length, d // h)
        )

    out, weights = _attention(
        fold(q), fold(k), fold(v), padding.repeat_interleave(h, dim=0)
    )
    merged = out.reshape(b, h, length, d // h).transpose(1, 2).reshape(b, length, d)
    return F.linear(merged, mha.out_proj.weight, mha.out_proj.bias), weights


@wrong("multi_head_attention", "weights_averaged")
def mha_weights_averaged(x, padding, mha):
    out, weights = _mha(x, padding, mha)
    return out, weights.mean(dim=1)


def _pasted_from_chapter_3():
    """Chapter 3's multi_head_self_attention pasted into the homework under the exercise's
    name: it computes the output alone."""
    import inspect

    from transformer_lab import set_classifier

    source = inspect.getsource(set_classifier.multi_head_self_attention)
    namespace = dict(vars(set_classifier))
    exec(
        source.replace("multi_head_self_attention", "mha_pasted_from_chapter_3"), namespace
    )
    return namespace["mha_pasted_from_chapter_3"]


WRONG.append(Mutant("multi_head_attention", _pasted_from_chapter_3(), "weights_missing"))


def _mha_steps(
    x, padding, mha, value_chunk=2, out_bias_twice=False, temperature=1.0, groups="blocks"
):
    """Multi-head attention with slips that no mistake table foresees, one per step."""
    b, length, d = x.shape
    h = mha.num_heads
    chunks = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    q, k, v = chunks[0], chunks[1], chunks[value_chunk]

    def split(t):
        if groups in ("strided", "strided_split_only"):  # head j: features j, j + H, ...
            return t.reshape(b, length, d // h, h).permute(0, 3, 1, 2)
        return t.reshape(b, length, h, d // h).transpose(1, 2)

    def merge(t):
        if groups == "strided":
            return t.permute(0, 2, 3, 1).reshape(b, length, d)
        return t.transpose(1, 2).reshape(b, length, d)

    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(-2, -1) / (math.sqrt(d // h) * temperature)
    scores = scores.masked_fill(padding[:, None, None, :], INF)
    merged = merge(torch.softmax(scores, dim=-1) @ v)
    out = F.linear(merged, mha.out_proj.weight, mha.out_proj.bias)
    return out + mha.out_proj.bias if out_bias_twice else out


@wrong("multi_head_attention", "wrong_step_projection")
def mha_values_from_the_keys(x, padding, mha):
    return _mha_steps(x, padding, mha, value_chunk=1)


@wrong("multi_head_attention", "wrong_step_output_projection")
def mha_output_bias_twice(x, padding, mha):
    return _mha_steps(x, padding, mha, out_bias_twice=True)


@wrong("multi_head_attention", "wrong_step_attention")
def mha_softmax_temperature(x, padding, mha):
    return _mha_steps(x, padding, mha, temperature=1.5)


@wrong("multi_head_attention", "wrong_step_heads")
def mha_split_and_merge_disagree(x, padding, mha):
    return _mha_steps(x, padding, mha, groups="strided_split_only")


@wrong("multi_head_attention", "wrong_step_per_head")
def mha_strided_heads(x, padding, mha):
    return _mha_steps(x, padding, mha, groups="strided")


@wrong("multi_head_attention", "library_attention")
def mha_calls_the_layer(x, padding, mha):
    return mha(x, x, x, key_padding_mask=padding, need_weights=False)[0]


@wrong("multi_head_attention", "weights_missing")
def mha_returns_no_weights(x, padding, mha):
    return _mha(x, padding, mha)[0], None


@wrong("multi_head_attention", "result_not_a_pair")
def mha_returns_three(x, padding, mha):
    out, weights = _mha(x, padding, mha)
    return out, weights, weights.mean(dim=1)


@wrong("multi_head_attention", "heads_not_merged")
def mha_heads_left_split(x, padding, mha):
    b, length, d = x.shape
    h = mha.num_heads
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    q, k, v = (t.view(b, length, h, d // h).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d // h)).masked_fill(
        padding[:, None, None, :], INF
    )
    return torch.softmax(scores, dim=-1) @ v


# =============================================================================================
# Week 20, Task 2: toy_weights
# =============================================================================================


@right("toy_weights")
def toy_einsum(embeddings, w_q, w_k):
    q, k = embeddings @ w_q, embeddings @ w_k
    scores = torch.einsum("id,jd->ij", q, k) / embeddings.shape[1] ** 0.5
    return (scores - scores.amax(-1, keepdim=True)).exp() / (
        scores - scores.amax(-1, keepdim=True)
    ).exp().sum(-1, keepdim=True)


def _toy(embeddings, w_q, w_k, divisor=None, dim=-1, swap=False, project=True):
    q, k = (embeddings @ w_q, embeddings @ w_k) if project else (embeddings, embeddings)
    if swap:
        q, k = k, q
    divisor = math.sqrt(embeddings.shape[1]) if divisor is None else divisor
    return torch.softmax(q @ k.T / divisor, dim=dim)


@wrong("toy_weights", "softmax_over_queries")
def toy_softmax_dim0(embeddings, w_q, w_k):
    return _toy(embeddings, w_q, w_k, dim=0)


@wrong("toy_weights", "queries_keys_swapped")
def toy_swapped(embeddings, w_q, w_k):
    return _toy(embeddings, w_q, w_k, swap=True)


@wrong("toy_weights", "no_scaling")
def toy_unscaled(embeddings, w_q, w_k):
    return _toy(embeddings, w_q, w_k, divisor=1.0)


@wrong("toy_weights", "divided_by_d")
def toy_divided_by_d(embeddings, w_q, w_k):
    return _toy(embeddings, w_q, w_k, divisor=embeddings.shape[1])


@wrong("toy_weights", "no_projections")
def toy_no_projections(embeddings, w_q, w_k):
    return _toy(embeddings, w_q, w_k, project=False)


@wrong("toy_weights", "rows_do_not_sum_to_one")
def toy_no_softmax(embeddings, w_q, w_k):
    return (embeddings @ w_q) @ (embeddings @ w_k).T / 2


@wrong("toy_weights", "library_attention")
def toy_library(embeddings, w_q, w_k):
    q, k = (embeddings @ w_q)[None], (embeddings @ w_k)[None]
    out = F.scaled_dot_product_attention(q, k, torch.eye(len(embeddings))[None])
    return out[0]


@wrong("toy_weights", "table_shape")
def toy_one_row(embeddings, w_q, w_k):
    return _toy(embeddings, w_q, w_k)[0]


# =============================================================================================
# Week 20, Tasks 1 and 4: the character model's forward, the sinusoid table
# =============================================================================================


def _praise(
    model, ids, padding, positions=None, key_mask="keys", pool="masked", end="logit"
):
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids)
    if positions is not None:
        x = x + positions(ids.shape[1], x.shape[-1])
    mask = {"keys": padding, "none": None, "inverted": ~padding}[key_mask]
    x = model.encoder(x, src_key_padding_mask=mask)
    pooled = masked_mean(x, padding) if pool == "masked" else x.mean(dim=1)
    logits = model.head(pooled)
    if end == "unsqueezed":
        return logits
    logits = logits.squeeze(-1)
    return torch.sigmoid(logits) if end == "sigmoid" else logits


def _learned(model):
    return lambda length, width: model.pos(torch.arange(length))


@right("forward_without_positions")
def no_positions_by_layer(model, ids, padding):
    x = model.embed(ids)
    for layer in model.encoder.layers:
        x = layer(x, src_key_padding_mask=padding)
    keep = (~padding).unsqueeze(-1).float()
    return model.head((x * keep).sum(1) / keep.sum(1))[:, 0]


@wrong("forward_without_positions", "positions_still_added")
def no_positions_still_added(model, ids, padding):
    return _praise(model, ids, padding, positions=_learned(model))


@wrong("forward_without_positions", "padding_not_masked")
def no_positions_no_mask(model, ids, padding):
    return _praise(model, ids, padding, key_mask="none")


@wrong("forward_without_positions", "inverted_mask")
def no_positions_inverted(model, ids, padding):
    return _praise(model, ids, padding, key_mask="inverted")


@wrong("forward_without_positions", "plain_mean")
def no_positions_plain_mean(model, ids, padding):
    return _praise(model, ids, padding, pool="plain")


@wrong("forward_without_positions", "returns_probabilities")
def no_positions_sigmoid(model, ids, padding):
    return _praise(model, ids, padding, end="sigmoid")


@wrong("forward_without_positions", "not_squeezed")
def no_positions_unsqueezed(model, ids, padding):
    return _praise(model, ids, padding, end="unsqueezed")


@wrong("forward_without_positions", "head_bias_left_out")
def no_positions_no_head_bias(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.encoder(model.embed(ids), src_key_padding_mask=padding)
    return (masked_mean(x, padding) @ model.head.weight.T).squeeze(-1)


def _book_sines(length, d_model):
    angle = torch.arange(length)[:, None] * 10000.0 ** (
        -torch.arange(0, d_model, 2) / d_model
    )
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


@right("sinusoidal_positions")
def sines_by_slices(length, d_model):
    table = torch.zeros(length, d_model)
    position = torch.arange(length, dtype=torch.float32)[:, None]
    speed = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2) / d_model)
    table[:, 0::2] = torch.sin(position * speed)
    table[:, 1::2] = torch.cos(position * speed)
    return table


@wrong("sinusoidal_positions", "sines_cosines_swapped")
def sines_swapped(length, d_model):
    table = _book_sines(length, d_model)
    return torch.stack([table[:, 1::2], table[:, 0::2]], dim=-1).flatten(1)


@wrong("sinusoidal_positions", "blocks_not_interleaved")
def sines_in_blocks(length, d_model):
    table = _book_sines(length, d_model)
    return torch.cat([table[:, 0::2], table[:, 1::2]], dim=1)


@wrong("sinusoidal_positions", "frequency_of_i")
def sines_frequency_of_i(length, d_model):
    angle = torch.arange(length)[:, None] * 10000.0 ** (
        -torch.arange(d_model // 2) / d_model
    )
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


@wrong("sinusoidal_positions", "frequency_sign")
def sines_positive_exponent(length, d_model):
    angle = torch.arange(length)[:, None] * 10000.0 ** (
        torch.arange(0, d_model, 2) / d_model
    )
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


@wrong("sinusoidal_positions", "table_transposed")
def sines_transposed(length, d_model):
    return _book_sines(length, d_model).T


@wrong("sinusoidal_positions", "table_differs")
def sines_base_1000(length, d_model):
    angle = torch.arange(length)[:, None] * 1000.0 ** (
        -torch.arange(0, d_model, 2) / d_model
    )
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


@right("forward_with_sinusoids")
def sines_forward(model, ids, padding):
    return _praise(model, ids, padding, positions=sines_by_slices)


@wrong("forward_with_sinusoids", "learned_table_added")
def sines_forward_learned(model, ids, padding):
    return _praise(model, ids, padding, positions=_learned(model))


@wrong("forward_with_sinusoids", "no_positions")
def sines_forward_none(model, ids, padding):
    return _praise(model, ids, padding)


@wrong("forward_with_sinusoids", "plain_mean")
def sines_forward_plain_mean(model, ids, padding):
    return _praise(model, ids, padding, positions=_book_sines, pool="plain")


@wrong("forward_with_sinusoids", "wrong_stage_embedding")
def sines_forward_after_encoder(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.encoder(model.embed(ids), src_key_padding_mask=padding)
    x = x + _book_sines(ids.shape[1], x.shape[-1])
    return model.head(masked_mean(x, padding)).squeeze(-1)


# =============================================================================================
# Week 20, Task 4: repaired_forward (the broken transformer)
# =============================================================================================


def _repair(model, ids, padding, batch_axis=False, sigmoid=False):
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    if batch_axis:
        x = model.encoder(x, src_key_padding_mask=padding.T)
    else:
        x = model.encoder(x.permute(1, 0, 2), src_key_padding_mask=padding).permute(1, 0, 2)
    logits = model.head(masked_mean(x, padding)).squeeze(-1)
    return torch.sigmoid(logits) if sigmoid else logits


@right("repaired_forward")
def repaired_by_layer(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = (model.embed(ids) + model.pos.weight[: ids.shape[1]]).transpose(0, 1)
    x = model.encoder.layers[0](x, src_key_padding_mask=padding).transpose(0, 1)
    return model.head(masked_mean(x, padding))[:, 0]


@wrong("repaired_forward", "batch_axis")
def repaired_batch_axis_left(model, ids, padding):
    return _repair(model, ids, padding, batch_axis=True)


@wrong("repaired_forward", "double_sigmoid")
def repaired_sigmoid_left(model, ids, padding):
    return _repair(model, ids, padding, sigmoid=True)


@wrong("repaired_forward", "batch_axis+double_sigmoid")
def repaired_nothing_but_the_mask(model, ids, padding):
    return _repair(model, ids, padding, batch_axis=True, sigmoid=True)


@wrong("repaired_forward", "positions_left_out")
def repaired_without_positions(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.encoder(model.embed(ids).transpose(0, 1), src_key_padding_mask=padding)
    return model.head(masked_mean(x.transpose(0, 1), padding)).squeeze(-1)


# =============================================================================================
# Week 20, Task 6: encode_with_bpe
# =============================================================================================


def _bpe(tokenizer, texts, length, side="right", keep="start", pad=None, dtype=torch.long):
    pad = tokenizer.token_to_id("[PAD]") if pad is None else pad
    rows = []
    for text in texts:
        ids = tokenizer.encode(text).ids
        ids = ids[:length] if keep == "start" else ids[-length:]
        fill = [pad] * (length - len(ids))
        rows.append(ids + fill if side == "right" else fill + ids)
    return torch.tensor(rows, dtype=dtype)


@right("encode_with_bpe")
def bpe_with_the_tokenizers_own_padding(tokenizer, texts, length):
    tokenizer = Tokenizer.from_str(tokenizer.to_str())  # a copy: leave the caller's alone
    pad = tokenizer.token_to_id("[PAD]")
    tokenizer.enable_padding(pad_id=pad, pad_token="[PAD]", length=length)
    tokenizer.enable_truncation(max_length=length)
    return torch.tensor([e.ids for e in tokenizer.encode_batch(texts)])


@wrong("encode_with_bpe", "left_padding")
def bpe_left_padded(tokenizer, texts, length):
    return _bpe(tokenizer, texts, length, side="left")


@wrong("encode_with_bpe", "kept_the_end")
def bpe_kept_the_end(tokenizer, texts, length):
    return _bpe(tokenizer, texts, length, keep="end")


@wrong("encode_with_bpe", "padded_with_another_id")
def bpe_padded_with_one(tokenizer, texts, length):
    return _bpe(tokenizer, texts, length, pad=1)


@wrong("encode_with_bpe", "ids_not_long")
def bpe_float_ids(tokenizer, texts, length):
    return _bpe(tokenizer, texts, length, dtype=torch.float32)


@wrong("encode_with_bpe", "ids_shape")
def bpe_not_cut(tokenizer, texts, length):
    return _bpe(tokenizer, texts, 2 * length)


@wrong("encode_with_bpe", "ids_not_a_tensor")
def bpe_lists(tokenizer, texts, length):
    return _bpe(tokenizer, texts, length).tolist()


# =============================================================================================
# The second student pass: new mistakes, each with the diagnosis written for it
# =============================================================================================


@wrong("attention", "log_softmax")
def attention_log_softmax(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.log_softmax(scores.masked_fill(padding[:, None, :], INF), dim=-1)
    return weights @ v, weights


@wrong("attention", "mask_with_plus_inf")
def attention_plus_inf(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores.masked_fill(padding[:, None, :], float("inf")), dim=-1)
    return weights @ v, weights


@right("attention")
def attention_renormalised_after_softmax(q, k, v, padding):
    # zeroing padded keys after the softmax and renormalising each row is the same softmax
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1).masked_fill(padding[:, None, :], 0.0)
    weights = weights / weights.sum(-1, keepdim=True)
    return weights @ v, weights


@wrong("embedding_parameters", "counted_a_bias")
def embedding_padding_row(vocab_size, d):
    return (vocab_size + 1) * d  # "one more row for padding"


@wrong("embedding_parameters", "subtracted_special_tokens")
def embedding_without_special_tokens(vocab_size, d):
    return (vocab_size - 2) * d


@wrong("train_bpe_tokenizer", "continuing_subword_prefix")
def bpe_wordpiece_prefix(corpus, vocab_size):
    return bpe(corpus, vocab_size, continuing_subword_prefix="##")


@wrong("train_bpe_tokenizer", "end_of_word_suffix")
def bpe_end_of_word_suffix(corpus, vocab_size):
    return bpe(corpus, vocab_size, end_of_word_suffix="</w>")


@wrong("train_bpe_tokenizer", "added_special_tokens")
def bpe_special_tokens_on_top(corpus, vocab_size):
    return bpe(corpus, vocab_size + 2)


@wrong("train_bpe_tokenizer", "bpe_dropout")
def bpe_with_dropout(corpus, vocab_size):
    return bpe(corpus, vocab_size, model=lambda **kw: models.BPE(dropout=0.1, **kw))


@wrong("train_bpe_tokenizer", "extra_post_processor")
def bpe_with_a_post_processor(corpus, vocab_size):
    tokenizer = bpe(corpus, vocab_size)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="$A [PAD]", special_tokens=[("[PAD]", 1)]
    )
    return tokenizer


@wrong("train_bpe_tokenizer", "lowercased_corpus")
def bpe_lowercased(corpus, vocab_size):
    return bpe([text.lower() for text in corpus], vocab_size)


@right("train_bpe_tokenizer")
def bpe_bert_pre_tokenizer(corpus, vocab_size):
    # cuts at whitespace and punctuation too, as the exercise asks (a run like '?!' becomes two
    # pieces, where Whitespace keeps one; no probe has such a run)
    return bpe(corpus, vocab_size, pre_tokenizer=pre_tokenizers.BertPreTokenizer)


@wrong("train_bpe_tokenizer", "deduplicated_corpus")
def bpe_on_distinct_words(corpus, vocab_size):
    return bpe(sorted(set(" ".join(corpus).split())), vocab_size)


@wrong("train_bpe_tokenizer", "vocabulary_differs")
def bpe_short_tokens(corpus, vocab_size):
    return bpe(corpus, vocab_size, max_token_length=3)


@wrong("causal_padding_mask", "causal_off_by_one")
def causal_off_by_one(padding):
    length = padding.shape[1]
    future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=2)
    return future[None] | padding[:, None, :]


@wrong("multi_head_attention", "softmax_over_heads")
def mha_softmax_over_heads(x, padding, mha):
    return _mha(x, padding, mha, dim=1)


@wrong("multi_head_attention", "qkv_order")
def mha_keys_first(x, padding, mha):
    return _mha(x, padding, mha, order="kqv")  # k, q, v = ....chunk(3, dim=-1)


@wrong("multi_head_attention", "out_proj_not_transposed")
def mha_out_weight_not_transposed(x, padding, mha):
    merged, weights = _mha(x, padding, mha, out_proj=False)
    return merged @ mha.out_proj.weight + mha.out_proj.bias, weights


@wrong("toy_weights", "projections_transposed")
def toy_projections_transposed(embeddings, w_q, w_k):
    q, k = embeddings @ w_q.T, embeddings @ w_k.T
    return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1)


@wrong("toy_weights", "keys_from_w_q")
def toy_keys_from_w_q(embeddings, w_q, w_k):
    q = k = embeddings @ w_q
    return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1)


@wrong("toy_weights", "scaled_by_token_count")
def toy_scaled_by_tokens(embeddings, w_q, w_k):
    q, k = embeddings @ w_q, embeddings @ w_k
    return torch.softmax(q @ k.T / math.sqrt(len(embeddings)), dim=-1)


@wrong("toy_weights", "log_softmax")
def toy_log_softmax(embeddings, w_q, w_k):
    q, k = embeddings @ w_q, embeddings @ w_k
    return F.log_softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1)


@wrong("forward_without_positions", "max_pool")
def no_positions_max_pool(model, ids, padding):
    x = model.encoder(model.embed(ids), src_key_padding_mask=padding)
    return model.head(x.masked_fill(padding[..., None], -1e9).max(dim=1).values)[:, 0]


@wrong("forward_without_positions", "sum_pool")
def no_positions_sum_pool(model, ids, padding):
    x = model.encoder(model.embed(ids), src_key_padding_mask=padding)
    return model.head((x * (~padding)[..., None]).sum(dim=1)).squeeze(-1)


@wrong("forward_without_positions", "first_token_pooled")
def no_positions_first_token(model, ids, padding):
    x = model.encoder(model.embed(ids), src_key_padding_mask=padding)
    return model.head(x[:, 0]).squeeze(-1)


@wrong("sinusoidal_positions", "positions_from_one")
def sines_from_one(length, d_model):
    return _book_sines(length + 1, d_model)[1:]


@wrong("forward_with_sinusoids", "learned_table_kept")
def sines_forward_both_tables(model, ids, padding):
    def both(length, width):
        return _book_sines(length, width) + model.pos(torch.arange(length))

    return _praise(model, ids, padding, positions=both)


@wrong("repaired_forward", "encoder_mask_inverted")
def repaired_encoder_mask_left_inverted(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    x = model.encoder(x.transpose(0, 1), src_key_padding_mask=~padding).transpose(0, 1)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("masked_mean", "count_plus_one")
def masked_mean_count_plus_one(x, padding):
    keep = (~padding).unsqueeze(-1).to(x.dtype)
    return (x * keep).sum(1) / (keep.sum(1) + 1)  # "so that it never divides by zero"


@wrong("masked_mean", "first_token")
def masked_mean_first_token(x, padding):
    return x[:, 0]


@wrong("forward_without_positions", "causal_mask")
def no_positions_causal(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    length = ids.shape[1]
    future = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
    x = model.encoder(model.embed(ids), mask=future, src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("forward_with_sinusoids", "sum_pool")
def sines_forward_sum_pool(model, ids, padding):
    x = model.embed(ids) + _book_sines(ids.shape[1], model.embed.embedding_dim)
    x = model.encoder(x, src_key_padding_mask=padding)
    return model.head(x.masked_fill(padding[..., None], 0.0).sum(dim=1)).squeeze(-1)


@wrong("accuracy", "all_negative")
def accuracy_softmax_over_the_batch(logits, labels):
    probabilities = torch.softmax(logits, dim=0)  # a multi-class habit
    return ((probabilities > 0.5).float() == labels).float().mean().item()


# =============================================================================================
# Week 20, the third pass: each mistake a student made on the client's own page, each
# with the diagnosis written for it, and right answers written unlike the book's. A code
# "raised:TEXT" means the function raises and the report's line must carry TEXT (its hint).
# =============================================================================================


def _encode_no_pos(model, ids, padding):
    return model.encoder(model.embed(ids), src_key_padding_mask=padding)


@wrong("forward_without_positions", "embedding_scaled")
def w20_no_positions_scaled_embedding(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids) * math.sqrt(
        model.embed.embedding_dim
    )  # the original paper's habit
    x = model.encoder(x, src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("forward_without_positions", "head_bias_left_out")
def w20_no_positions_no_bias(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    pooled = masked_mean(_encode_no_pos(model, ids, padding), padding)
    return pooled @ model.head.weight[0]


@wrong("forward_without_positions", "raised:src_key_padding_mask=padding")
def w20_no_positions_mask_transposed(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.encoder(model.embed(ids), src_key_padding_mask=padding.T)  # a 2-D .T
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("forward_without_positions", "raised:no forward of its own")
def w20_no_positions_switch(model, ids, padding):
    model.use_positions = False  # the book's switch, not the student's forward
    return model(ids, padding)


@wrong("forward_without_positions", "batch_axis")
def w20_no_positions_transposed_for_the_encoder(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    # chapter 4's layer is batch_first: this transpose makes it attend across the batch
    x = model.encoder(model.embed(ids).transpose(0, 1)).transpose(0, 1)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@right("forward_without_positions")
def w20_no_positions_functional_head(model, ids, padding):
    x = model.embed(ids)
    x = model.encoder(x, src_key_padding_mask=padding)
    weights = (~padding).float() / (~padding).float().sum(1, keepdim=True)
    pooled = torch.einsum("nl,nld->nd", weights, x)
    return F.linear(pooled, model.head.weight, model.head.bias).flatten()


@wrong("sinusoidal_positions", "frequency_over_length")
def w20_table_over_length(length, d_model):
    angle = torch.arange(length)[:, None] * 10000.0 ** (
        -torch.arange(0, d_model, 2) / length
    )
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


@wrong("sinusoidal_positions", "same_position_everywhere")
def w20_table_every_row_position_zero(length, d_model):
    position = torch.zeros(length, 1)  # meant torch.arange(length)
    angle = position * 10000.0 ** (-torch.arange(0, d_model, 2) / d_model)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


@wrong("sinusoidal_positions", "frequency_in_degrees")
def w20_table_degrees(length, d_model):
    angle = torch.arange(length)[:, None] * 10000.0 ** (
        -torch.arange(0, d_model, 2) / d_model
    )
    angle = torch.deg2rad(angle)  # "sin takes degrees"
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


@right("sinusoidal_positions")
def w20_table_complex(length, d_model):
    speed = torch.exp(
        -math.log(1e4) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model
    )
    turn = torch.polar(
        torch.ones(length, d_model // 2, dtype=torch.float64),
        torch.arange(length, dtype=torch.float64)[:, None] * speed,
    )
    pairs = torch.view_as_real(turn).flip(-1)  # (cos, sin) -> (sin, cos)
    return pairs.reshape(length, d_model).float()


@wrong("forward_with_sinusoids", "same_position_everywhere")
def w20_sines_forward_row_zero(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    table = _book_sines(
        1, model.embed.embedding_dim
    )  # one row, broadcast to every position
    x = model.encoder(model.embed(ids) + table, src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("forward_with_sinusoids", "raised:sinusoidal_positions(ids.shape[1]")
def w20_sines_forward_fixed_length(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    table = _book_sines(48, model.embed.embedding_dim)  # the window of chapter 4
    x = model.encoder(model.embed(ids) + table, src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("forward_with_sinusoids", "raised:no forward of its own")
def w20_sines_forward_through_the_model(model, ids, padding):
    with torch.no_grad():
        model.pos.weight[: ids.shape[1]] = _book_sines(
            ids.shape[1], model.pos.embedding_dim
        )
    model.use_positions = True
    return model(ids, padding)


@wrong("forward_with_sinusoids", "positions_scaled")
def w20_sines_forward_scaled(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    width = model.embed.embedding_dim
    x = model.embed(ids) + _book_sines(ids.shape[1], width) / math.sqrt(width)
    x = model.encoder(x, src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@right("forward_with_sinusoids")
def w20_sines_forward_float64_table(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    length, width = ids.shape[1], model.embed.embedding_dim
    angle = torch.arange(length, dtype=torch.float64)[:, None] / 10000.0 ** (
        torch.arange(0, width, 2, dtype=torch.float64) / width
    )
    table = torch.zeros(length, width, dtype=torch.float64)
    table[:, ::2], table[:, 1::2] = angle.sin(), angle.cos()
    x = model.encoder(model.embed(ids) + table.float(), src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("repaired_forward", "raised:src_key_padding_mask stays (N, L)")
def w20_repaired_mask_transposed_too(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    x = model.encoder(x.transpose(0, 1), src_key_padding_mask=padding.T).transpose(0, 1)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("repaired_forward", "raised:no forward of its own")
def w20_repaired_by_the_book(model, ids, padding):
    from transformer_lab.broken_transformer import broken_forward

    return broken_forward(model, ids, padding, ())


@wrong("repaired_forward", "plain_mean")
def w20_repaired_plain_mean(model, ids, padding):
    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    x = model.encoder(x.transpose(0, 1), src_key_padding_mask=padding).transpose(0, 1)
    return model.head(x.mean(dim=1)).squeeze(-1)


@wrong("repaired_forward", "positions_left_out")
def w20_repaired_without_positions(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.encoder(model.embed(ids).transpose(0, 1), src_key_padding_mask=padding)
    return model.head(masked_mean(x.transpose(0, 1), padding)).squeeze(-1)


@wrong("repaired_forward", "encoder_mask_inverted")
def w20_repaired_mask_from_ids_inverted(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    real = ids != 0  # True = a real character: the opposite of what the encoder wants
    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    x = model.encoder(x.transpose(0, 1), src_key_padding_mask=real).transpose(0, 1)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@right("repaired_forward")
def w20_repaired_one_comment_at_a_time(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    rows = []
    for n in range(ids.shape[0]):
        x = model.embed(ids[n : n + 1]) + model.pos.weight[: ids.shape[1]]
        x = model.encoder(x.permute(1, 0, 2), src_key_padding_mask=padding[n : n + 1])
        rows.append(model.head(masked_mean(x.permute(1, 0, 2), padding[n : n + 1])))
    return torch.cat(rows).view(-1)


@wrong("toy_weights", "negative_weights")
def w20_toy_normalised_without_exp(embeddings, w_q, w_k):
    scores = (embeddings @ w_q) @ (embeddings @ w_k).T / math.sqrt(embeddings.shape[1])
    return scores / scores.sum(dim=-1, keepdim=True)  # sums to 1, but is not a softmax


@wrong("toy_weights", "weights_transposed")
def w20_toy_transposed(embeddings, w_q, w_k):
    q, k = embeddings @ w_q, embeddings @ w_k
    return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1).T


@wrong("toy_weights", "keys_not_transposed")
def w20_toy_no_transpose(embeddings, w_q, w_k):
    q, k = embeddings @ w_q, embeddings @ w_k
    return torch.softmax(q @ k / math.sqrt(q.shape[-1]), dim=-1)  # square toy: no error


@right("toy_weights")
def w20_toy_by_hand(embeddings, w_q, w_k):
    q, k = (embeddings @ w_q).tolist(), (embeddings @ w_k).tolist()
    d = len(q[0])
    rows = []
    for qi in q:
        scores = [sum(a * b for a, b in zip(qi, kj)) / math.sqrt(d) for kj in k]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        rows.append([e / sum(exps) for e in exps])
    return torch.tensor(rows)


@wrong("encode_with_bpe", "cut_characters_not_ids")
def w20_bpe_cut_text(tokenizer, texts, length):
    rows = [tokenizer.encode(text[:length]).ids[:length] for text in texts]
    pad = tokenizer.token_to_id("[PAD]")
    return torch.tensor([r + [pad] * (length - len(r)) for r in rows])


@wrong("encode_with_bpe", "cut_one_short")
def w20_bpe_off_by_one(tokenizer, texts, length):
    pad = tokenizer.token_to_id("[PAD]")
    rows = [tokenizer.encode(text).ids[: length - 1] for text in texts]
    return torch.tensor([r + [pad] * (length - len(r)) for r in rows])


@right("encode_with_bpe")
def w20_bpe_full_then_copy(tokenizer, texts, length):
    out = torch.full((len(texts), length), tokenizer.token_to_id("[PAD]"), dtype=torch.long)
    for n, encoding in enumerate(tokenizer.encode_batch(list(texts))):
        ids = encoding.ids[:length]
        out[n, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return out


@wrong("multi_head_attention", "residual_inside_attention")
def w20_mha_residual(x, padding, mha):
    b, length, d = x.shape
    h = mha.num_heads
    q, k, v = (x @ mha.in_proj_weight.T + mha.in_proj_bias).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, length, h, d // h).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
    scores = scores.masked_fill(padding[:, None, None, :], INF)
    out = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, length, d)
    return (
        out @ mha.out_proj.weight.T + mha.out_proj.bias + x
    )  # the layer's residual, too early


@wrong("accuracy", "nothing_counted_right")
def w20_accuracy_probabilities_against_labels(logits, labels):
    return (torch.sigmoid(logits) == labels).float().mean().item()  # never exactly 0 or 1


@wrong("accuracy", "integer_division")
def w20_accuracy_floor(logits, labels):
    return float(((logits > 0).float() == labels).sum().item() // len(labels))


@wrong("forward_without_positions", "position_zero_added")
def w20_no_positions_index_zero(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    # "no positions": every index set to 0, but model.pos(0) is still a learned vector
    x = model.embed(ids) + model.pos(torch.zeros_like(ids))
    x = model.encoder(x, src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("forward_with_sinusoids", "wrong_stage_embedding")
def w20_sines_forward_normalised_input(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    width = model.embed.embedding_dim
    x = F.layer_norm(model.embed(ids) + _book_sines(ids.shape[1], width), (width,))
    x = model.encoder(x, src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("repaired_forward", "wrong_stage_head")
def w20_repaired_temperature(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    x = model.encoder(x.transpose(0, 1), src_key_padding_mask=padding).transpose(0, 1)
    return model.head(masked_mean(x, padding)).squeeze(-1) / 2  # "calibrated"


@wrong("toy_weights", "scores_scaled_wrong")
def w20_toy_fourth_root(embeddings, w_q, w_k):
    q, k = embeddings @ w_q, embeddings @ w_k
    return torch.softmax(q @ k.T / q.shape[-1] ** 0.25, dim=-1)  # "the square root, again"


@wrong("encode_with_bpe", "not_the_tokenizers_ids")
def w20_bpe_upper_cased(tokenizer, texts, length):
    pad = tokenizer.token_to_id("[PAD]")
    rows = [tokenizer.encode(text.upper()).ids[:length] for text in texts]
    return torch.tensor([r + [pad] * (length - len(r)) for r in rows])


@wrong("encode_with_bpe", "padding_misplaced")
def w20_bpe_centred(tokenizer, texts, length):
    pad = tokenizer.token_to_id("[PAD]")
    rows = []
    for text in texts:
        ids = tokenizer.encode(text).ids[:length]
        left = (length - len(ids)) // 2
        rows.append([pad] * left + ids + [pad] * (length - len(ids) - left))
    return torch.tensor(rows)


# Names once given wrong: dropout was blamed on the batch axis, a skipped encoder on the
# embedding, and a hard-coded [PAD] id of 0 passed.


@wrong("forward_without_positions", "random_forward")
def w20_no_positions_functional_dropout(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.encoder(F.dropout(model.embed(ids), 0.1), src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@right("forward_without_positions")
def w20_no_positions_dropout_switched_off(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = F.dropout(model.embed(ids), 0.1, training=False)
    x = model.encoder(x, src_key_padding_mask=padding)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("repaired_forward", "random_forward")
def w20_repaired_dropout_before_the_head(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    x = model.encoder(x.transpose(0, 1), src_key_padding_mask=padding).transpose(0, 1)
    return model.head(F.dropout(masked_mean(x, padding), 0.2)).squeeze(-1)


@wrong("forward_without_positions", "encoder_skipped")
def w20_no_positions_skips_the_encoder(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    return model.head(masked_mean(model.embed(ids), padding)).squeeze(-1)


@wrong("repaired_forward", "encoder_skipped")
def w20_repaired_skips_the_encoder(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("forward_with_sinusoids", "encoder_skipped")
def w20_sines_forward_skips_the_encoder(model, ids, padding):
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids) + _book_sines(ids.shape[1], model.embed.embedding_dim)
    return model.head(masked_mean(x, padding)).squeeze(-1)


@wrong("encode_with_bpe", "pad_id_hard_coded")
def w20_bpe_pad_zero(tokenizer, texts, length):
    rows = [tokenizer.encode(text).ids[:length] for text in texts]
    return torch.tensor([r + [0] * (length - len(r)) for r in rows])


W20_LABELS = {m.label for m in WRONG + RIGHT if m.function.__name__.startswith("w20_")}


# =============================================================================================
# Running the catalogue
# =============================================================================================


@functools.cache
def run(mutant: Mutant):
    """The self-check's result for one implementation, as a student's file would get it (run
    once: the per-mutant tests and the suite's statistics share the results)."""
    return BY_NAME[mutant.check].run(mutant.function)


RAISED_PREFIX = "raised:"


def is_named(mutant: Mutant, result) -> bool:
    """The self-check named the mistake made: its own code, or, for a function that raises
    (``raised:TEXT``), a report line whose first hint carries TEXT."""
    if mutant.code is not None and mutant.code.startswith(RAISED_PREFIX):
        hint = result.summary.partition("(hint: ")[2]
        return result.status == RAISED and mutant.code[len(RAISED_PREFIX) :] in hint
    return result.code == mutant.code and mutant.code not in GENERIC_CODES


def statistics(wrong_list: list[Mutant] | None = None, right_list=None) -> dict:
    """Variants, rejected, named (by their own mistake's code), misnamed, and right ones passed."""
    wrong_list = WRONG if wrong_list is None else wrong_list
    right_list = RIGHT if right_list is None else right_list
    wrong_results = [(m, run(m)) for m in wrong_list]
    right_results = [(m, run(m)) for m in right_list]
    named = [m for m, r in wrong_results if is_named(m, r)]
    misnamed = [
        (m, r)
        for m, r in wrong_results
        if m not in named and r.code is not None and r.code not in GENERIC_CODES
    ]
    return {
        "wrong": len(wrong_list),
        "rejected": sum(r.status != PASSED for _, r in wrong_results),
        "named": len(named),
        "misnamed": misnamed,
        "unnamed": [
            (m, r) for m, r in wrong_results if m not in named and (m, r) not in misnamed
        ],
        "right": len(right_list),
        "right_passed": sum(r.status == PASSED for _, r in right_results),
        "false_alarms": [(m, r) for m, r in right_results if r.status != PASSED],
        "functions": len({m.check for m in wrong_list}),
    }


def summary(stats: dict) -> str:
    wrong_total = stats["wrong"]
    lines = [
        f"{wrong_total} wrong variants across {stats['functions']} graded functions: "
        f"{stats['rejected']} rejected ({100 * stats['rejected'] / wrong_total:.0f} %), "
        f"{stats['named']} named by their own mistake ({100 * stats['named'] / wrong_total:.0f} %), "
        f"{len(stats['misnamed'])} named as another mistake; "
        f"{stats['right_passed']} of {stats['right']} right variants pass."
    ]
    for mutant, result in stats["unnamed"] + stats["misnamed"]:
        lines.append(
            f"  {mutant.label}: expected {mutant.code}, got {result.status} {result.code or result.summary}"
        )
    for mutant, result in stats["false_alarms"]:
        lines.append(
            f"  false alarm on {mutant.label}: {result.status} {result.code or result.summary}"
        )
    return "\n".join(lines)


def week20_statistics() -> dict:
    """The same numbers for the third pass's Week-20 variants alone."""
    return statistics(
        [m for m in WRONG if m.label in W20_LABELS],
        [m for m in RIGHT if m.label in W20_LABELS],
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    print(summary(week20_statistics() if "--week20" in sys.argv else statistics()))
