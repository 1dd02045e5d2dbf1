"""transformer_lab.selfcheck: known-wrong homework functions get their own diagnosis; right ones pass.

Each wrong implementation below makes one mistake students make. The test asserts the check
fails with that mistake's code and message, and that the message shows what was expected and
what came back. The correct alternatives (einsum, loops, PyTorch's fused attention, a large
negative number instead of −∞, ...) must pass: a false alarm would teach the wrong lesson.
"""

import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from transformer_lab import selfcheck
from transformer_lab.selfcheck import (
    FAILED,
    MISSING,
    NOT_DONE,
    PASSED,
    RAISED,
    check_accuracy,
    check_attention,
    check_embedding_parameters,
    check_file,
    check_masked_mean,
    check_tokens_per_word,
    check_train_bpe_tokenizer,
    format_report,
)

ROOT = Path(__file__).resolve().parents[1]
STARTER = ROOT / "exercises" / "homework" / "starter.py"


def assert_diagnosis(result, code, *phrases):
    """The check failed with ``code``, its message holds ``phrases``, and the evidence differs."""
    assert result.status == FAILED, f"expected a failure, got {result.status}: {result.summary}"
    assert result.code == code, f"expected {code}, got {result.code}: {result.finding}"
    message = result.finding.mistake.lower()
    for phrase in phrases:
        assert phrase.lower() in message, f"{phrase!r} not in {result.finding.mistake!r}"
    assert result.finding.expected and result.finding.received
    assert result.finding.expected != result.finding.received
    report = format_report(selfcheck.Report("student.py", [result]))
    assert "Likely mistake:" in report and "expected:" in report and "received:" in report


# ---------------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------------


def scores_of(q, k, scale=True):
    scores = q @ k.transpose(-2, -1)
    return scores / math.sqrt(q.shape[-1]) if scale else scores


def attention_masked_fill(q, k, v, padding):
    scores = scores_of(q, k).masked_fill(padding[:, None, :], float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def attention_einsum(q, k, v, padding):
    scores = torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5
    scores = torch.where(padding.unsqueeze(1), torch.tensor(float("-inf")), scores)
    weights = scores.softmax(-1)
    return torch.einsum("bqk,bkv->bqv", weights, v), weights


def attention_loop(q, k, v, padding):
    outputs, all_weights = [], []
    for b in range(q.shape[0]):
        keep = ~padding[b]
        weights = torch.zeros(q.shape[1], k.shape[1], dtype=q.dtype)
        weights[:, keep] = torch.softmax(q[b] @ k[b, keep].T / math.sqrt(q.shape[-1]), dim=-1)
        outputs.append(weights @ v[b])
        all_weights.append(weights)
    return torch.stack(outputs), torch.stack(all_weights)


def attention_sdpa(q, k, v, padding):
    allowed = ~padding[:, None, :]
    output = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    weights = torch.softmax(scores_of(q, k).masked_fill(~allowed, float("-inf")), dim=-1)
    return output, weights


def attention_large_negative(q, k, v, padding):
    scores = scores_of(q, k).masked_fill(padding[:, None, :], -1e9)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def attention_renormalised_after(q, k, v, padding):
    """Zeroing after the softmax *and renormalising* is mathematically the same as −∞ before."""
    weights = torch.softmax(scores_of(q, k), dim=-1).masked_fill(padding[:, None, :], 0.0)
    weights = weights / weights.sum(-1, keepdim=True)
    return weights @ v, weights


def attention_stable_by_hand(q, k, v, padding):
    scores = scores_of(q, k).masked_fill(padding[:, None, :], float("-inf"))
    exp = torch.exp(scores - scores.amax(-1, keepdim=True))
    weights = exp / exp.sum(-1, keepdim=True)
    return weights @ v, weights


@pytest.mark.parametrize(
    "implementation",
    [attention_masked_fill, attention_einsum, attention_loop, attention_sdpa, attention_large_negative,
     attention_renormalised_after, attention_stable_by_hand],
)
def test_correct_attention_passes(implementation):
    result = check_attention(implementation)
    assert result.status == PASSED, result.finding or result.summary


def make_attention(scale="sqrt", dim=-1, mask="before"):
    """Build an attention with one (or more) deliberate mistakes."""

    def attention(q, k, v, padding):
        d = q.shape[-1]
        scores = q @ k.transpose(-2, -1)
        scores = {"sqrt": scores / math.sqrt(d), "none": scores, "d": scores / d,
                  "times": scores * math.sqrt(d), "shape1": scores / math.sqrt(q.shape[1])}[scale]
        ignore = padding[:, None, :]
        if mask == "before":
            scores = scores.masked_fill(ignore, float("-inf"))
        elif mask == "zero":
            scores = scores.masked_fill(ignore, 0.0)
        elif mask == "inverted":
            scores = scores.masked_fill(~ignore, float("-inf"))
        elif mask == "forgot_assignment":
            scores.masked_fill(ignore, float("-inf"))  # result thrown away
        weights = F.softmax(scores) if dim is None else torch.softmax(scores, dim=dim)  # no dim: a warning, dim 0
        if mask == "after":
            weights = weights.masked_fill(ignore, 0.0)
        return weights @ v, weights

    return attention


@pytest.mark.parametrize(
    "implementation, code, phrases",
    [
        (make_attention(dim=1), "softmax_over_queries", ["softmax ran over the queries"]),
        (make_attention(dim=-2), "softmax_over_queries", ["softmax ran over the queries"]),
        (make_attention(dim=0), "softmax_over_batch", ["batch axis"]),
        (make_attention(dim=None), "softmax_over_batch", ["batch axis"]),
        (make_attention(scale="none"), "no_scaling", ["not divided by √d"]),
        (make_attention(scale="d"), "divided_by_d", ["divided by d instead of √d"]),
        (make_attention(scale="times"), "multiplied_by_sqrt_d", ["multiplied by √d"]),
        (make_attention(scale="shape1"), "wrong_width", ["wrong size"]),
        (make_attention(mask="after"), "mask_after_softmax", ["zeroed after the softmax"]),
        (make_attention(mask="zero"), "mask_with_zero", ["set to 0 instead of −∞"]),
        (make_attention(mask="inverted"), "inverted_mask", ["mask was inverted"]),
        (make_attention(mask="forgot_assignment"), "mask_ignored", ["no effect"]),
        (make_attention(scale="none", dim=1), "no_scaling+softmax_over_queries", ["not divided by √d", "queries"]),
    ],
)
def test_attention_mistakes_are_named(implementation, code, phrases):
    assert_diagnosis(check_attention(implementation), code, *phrases)


def test_attention_mistake_messages_are_distinct():
    singles = [("sqrt_d", "keys", "before_inf")[:i] + (name,) + ("sqrt_d", "keys", "before_inf")[i + 1:]
               for i, group in enumerate((selfcheck._SCALES, selfcheck._AXES, selfcheck._MASKS))
               for name in list(group)[1:]]
    messages = [selfcheck._describe_variant(key)[1] for key in singles]
    assert len(set(messages)) == len(singles) == 11


def attention_output_only(q, k, v, padding):
    return attention_masked_fill(q, k, v, padding)[0]


def attention_weights_only(q, k, v, padding):
    return attention_masked_fill(q, k, v, padding)[1]


def attention_swapped(q, k, v, padding):
    output, weights = attention_masked_fill(q, k, v, padding)
    return weights, output


def attention_three_things(q, k, v, padding):
    output, weights = attention_masked_fill(q, k, v, padding)
    return output, weights, scores_of(q, k)


def attention_no_return(q, k, v, padding):
    attention_masked_fill(q, k, v, padding)


def attention_mixes_keys(q, k, v, padding):
    _, weights = attention_masked_fill(q, k, v, padding)
    return weights @ k, weights


def attention_transposed_weights(q, k, v, padding):
    output, weights = attention_masked_fill(q, k, v, padding)
    return output, weights.transpose(-2, -1)


def attention_numpy(q, k, v, padding):
    output, weights = attention_masked_fill(q, k, v, padding)
    return output, weights.detach().numpy()


def attention_detached(q, k, v, padding):
    output, weights = attention_masked_fill(q.detach(), k.detach(), v.detach(), padding)
    return output, weights


def attention_naive_softmax(q, k, v, padding):
    exp = torch.exp(scores_of(q, k)).masked_fill(padding[:, None, :], 0.0)
    weights = exp / exp.sum(-1, keepdim=True)
    return weights @ v, weights


def attention_in_place(q, k, v, padding):
    q.mul_(1.0)  # harmless so far
    v[padding] = 0.0  # "clean" the padded values: changes the caller's tensor
    return attention_masked_fill(q, k, v, padding)


def attention_output_from_unmasked(q, k, v, padding):
    weights = torch.softmax(scores_of(q, k).masked_fill(padding[:, None, :], float("-inf")), dim=-1)
    unmasked = torch.softmax(scores_of(q, k), dim=-1)
    return unmasked @ v, weights


@pytest.mark.parametrize(
    "implementation, code, phrases",
    [
        (attention_output_only, "returned_only_output", ["only the output"]),
        (attention_weights_only, "returned_only_weights", ["only the weights"]),
        (attention_swapped, "swapped_outputs", ["wrong order"]),
        (attention_three_things, "wrong_return_count", ["exactly two"]),
        (attention_no_return, "returned_none", ["none"]),
        (attention_mixes_keys, "mixed_keys", ["mixed k instead of v"]),
        (attention_transposed_weights, "weights_transposed", ["swapped"]),
        (attention_numpy, "weights_not_a_tensor", ["not a torch.tensor"]),
        (attention_detached, "no_gradient", ["no gradient"]),
        (attention_naive_softmax, "softmax_overflow", ["overflow"]),
        (attention_in_place, "changed_input", ["in place"]),
        (attention_output_from_unmasked, "output_from_other_weights", ["weights are right", "no effect"]),
    ],
)
def test_attention_structural_mistakes_are_named(implementation, code, phrases):
    assert_diagnosis(check_attention(implementation), code, *phrases)


def attention_dot_t(q, k, v, padding):
    weights = torch.softmax((q @ k.T / math.sqrt(q.shape[-1])).masked_fill(padding[:, None, :], float("-inf")), -1)
    return weights @ v, weights


def attention_flat_padding(q, k, v, padding):
    weights = torch.softmax(scores_of(q, k).masked_fill(padding, float("-inf")), -1)
    return weights @ v, weights


@pytest.mark.parametrize(
    "implementation, hint",
    [(attention_dot_t, "k.transpose(-2, -1)"), (attention_flat_padding, "padding[:, None, :]")],
)
def test_attention_errors_are_one_line_with_a_hint(implementation, hint):
    result = check_attention(implementation)
    assert result.status == RAISED
    assert "\n" not in result.summary
    assert result.summary.startswith("RuntimeError at test_selfcheck.py:")
    assert hint in result.summary


def test_unfinished_attention_is_not_done():
    def attention(q, k, v, padding):
        raise NotImplementedError("Exercise 1 (attention): to do")

    result = check_attention(attention)
    assert result.status == NOT_DONE
    assert "Exercise 1 (attention): to do" in result.summary


# ---------------------------------------------------------------------------------------------
# masked mean
# ---------------------------------------------------------------------------------------------


def masked_mean_multiply(x, padding):
    keep = (~padding).unsqueeze(-1).to(x.dtype)
    return (x * keep).sum(1) / keep.sum(1)


def masked_mean_loop(x, padding):
    return torch.stack([x[b][~padding[b]].mean(0) for b in range(x.shape[0])])


def masked_mean_masked_fill(x, padding):
    summed = x.masked_fill(padding[:, :, None], 0.0).sum(dim=1)
    return summed / (~padding).sum(dim=1, keepdim=True)


def masked_mean_nanmean(x, padding):
    return x.masked_fill(padding[:, :, None], float("nan")).nanmean(dim=1)


@pytest.mark.parametrize("implementation", [masked_mean_multiply, masked_mean_loop, masked_mean_masked_fill, masked_mean_nanmean])
def test_correct_masked_mean_passes(implementation):
    result = check_masked_mean(implementation)
    assert result.status == PASSED, result.finding or result.summary


def mean_over_padding(x, padding):
    return x.mean(dim=1)


def divided_by_full_length(x, padding):
    return x.masked_fill(padding[:, :, None], 0.0).sum(1) / x.shape[1]


def inverted_mean(x, padding):
    keep = padding.unsqueeze(-1).float()
    return (x * keep).sum(1) / keep.sum(1)


def summed(x, padding):
    return x.masked_fill(padding[:, :, None], 0.0).sum(1)


def counts_without_keepdim(x, padding):
    return x.masked_fill(padding[:, :, None], 0.0).sum(1) / (~padding).sum(1)


def kept_token_axis(x, padding):
    keep = (~padding).unsqueeze(-1).float()
    return (x * keep).sum(1, keepdim=True) / keep.sum(1, keepdim=True)


def averaged_features(x, padding):
    return x.mean(dim=-1)


def pooled_whole_batch(x, padding):
    return x[~padding].mean(0)


def in_place_zeroing(x, padding):
    x[padding] = 0.0
    return x.sum(1) / (~padding).sum(1, keepdim=True)


def detached_mean(x, padding):
    return masked_mean_multiply(x, padding).detach()


def one_minus_bool(x, padding):
    keep = (1 - padding).unsqueeze(-1)
    return (x * keep).sum(1) / keep.sum(1)


@pytest.mark.parametrize(
    "implementation, code, phrases",
    [
        (mean_over_padding, "mean_over_padding", ["included the padded tokens"]),
        (divided_by_full_length, "divided_by_full_length", ["divided by the full length"]),
        (inverted_mean, "inverted_mask", ["mask was inverted"]),
        (summed, "sum_not_mean", ["summed but not divided"]),
        (counts_without_keepdim, "counts_broadcast_wrong", ["counts had shape (b,)"]),
        (kept_token_axis, "kept_dimension", ["(b, 1, d)"]),
        (averaged_features, "averaged_over_features", ["feature axis"]),
        (pooled_whole_batch, "pooled_whole_batch", ["all examples were pooled"]),
        (in_place_zeroing, "changed_input", ["in place"]),
        (detached_mean, "no_gradient", ["no gradient"]),
    ],
)
def test_masked_mean_mistakes_are_named(implementation, code, phrases):
    assert_diagnosis(check_masked_mean(implementation), code, *phrases)


def test_masked_mean_bool_arithmetic_gets_a_hint():
    result = check_masked_mean(one_minus_bool)
    assert result.status == RAISED
    assert "~padding" in result.summary and "\n" not in result.summary


# ---------------------------------------------------------------------------------------------
# accuracy
# ---------------------------------------------------------------------------------------------


def accuracy_logit_zero(logits, labels):
    return ((logits > 0).float() == labels).float().mean().item()


def accuracy_sigmoid(logits, labels):
    return float(((torch.sigmoid(logits) > 0.5).long() == labels.long()).float().mean())


def accuracy_round(logits, labels):
    return (torch.round(torch.sigmoid(logits)) == labels).sum().item() / len(labels)


def accuracy_numpy_float64(logits, labels):
    return ((logits.numpy() > 0) == labels.numpy()).mean()  # numpy.float64 is a subclass of float


@pytest.mark.parametrize("implementation", [accuracy_logit_zero, accuracy_sigmoid, accuracy_round, accuracy_numpy_float64])
def test_correct_accuracy_passes(implementation):
    result = check_accuracy(implementation)
    assert result.status == PASSED, result.finding or result.summary


def test_accuracy_probe_separates_every_mistake():
    values = selfcheck.accuracy_variants(selfcheck.ACCURACY_LOGITS, selfcheck.ACCURACY_LABELS)
    assert len({round(v, 6) for v in values.values()}) == len(values), values


def accuracy_at_half(logits, labels):
    return ((logits > 0.5).float() == labels).float().mean().item()


def accuracy_tensor(logits, labels):
    return ((logits > 0).float() == labels).float().mean()


def accuracy_numpy32(logits, labels):
    return ((logits > 0).float() == labels).float().mean().numpy()


def accuracy_sigmoid_twice(logits, labels):
    probabilities = torch.sigmoid(logits)
    return ((torch.sigmoid(probabilities) > 0.5).float() == labels).float().mean().item()


def accuracy_probabilities_at_zero(logits, labels):
    return ((torch.sigmoid(logits) > 0).float() == labels).float().mean().item()


def accuracy_percent(logits, labels):
    return 100 * accuracy_logit_zero(logits, labels)


def accuracy_count(logits, labels):
    return int(((logits > 0).float() == labels).sum())


def accuracy_error_rate(logits, labels):
    return ((logits > 0).float() != labels).float().mean().item()


def accuracy_bool_mean(logits, labels):
    return ((logits > 0).float() == labels).mean().item()


@pytest.mark.parametrize(
    "implementation, code, phrases",
    [
        (accuracy_at_half, "threshold_logits_at_half", ["thresholded at 0.5"]),
        (accuracy_tensor, "returned_tensor", ["tensor came back instead of a python float"]),
        (accuracy_numpy32, "returned_numpy", ["numpy"]),
        (accuracy_sigmoid_twice, "all_positive", ["applied twice"]),
        (accuracy_probabilities_at_zero, "all_positive", ["compared with 0"]),
        (accuracy_percent, "percentage", ["percentage"]),
        (accuracy_count, "count_correct", ["number of correct predictions"]),
        (accuracy_error_rate, "error_rate", ["error rate"]),
    ],
)
def test_accuracy_mistakes_are_named(implementation, code, phrases):
    assert_diagnosis(check_accuracy(implementation), code, *phrases)


def test_accuracy_mean_of_booleans_gets_a_hint():
    result = check_accuracy(accuracy_bool_mean)
    assert result.status == RAISED
    assert ".float()" in result.summary


# ---------------------------------------------------------------------------------------------
# tokenizer training and tokens per word
# ---------------------------------------------------------------------------------------------


def bpe(corpus, vocab_size, pre_tokenizer=pre_tokenizers.Whitespace, specials=("[UNK]", "[PAD]"), size=None,
        unk_token="[UNK]"):
    tokenizer = Tokenizer(models.BPE(unk_token=unk_token))
    if pre_tokenizer is not None:
        tokenizer.pre_tokenizer = pre_tokenizer()
    trainer = trainers.BpeTrainer(vocab_size=size or vocab_size, special_tokens=list(specials), show_progress=False)
    tokenizer.train_from_iterator(corpus, trainer)
    return tokenizer


def bpe_as_in_the_exercise(corpus, vocab_size):
    return bpe(corpus, vocab_size)


def bpe_with_progress_bar(corpus, vocab_size):  # hint 3 of the page, which leaves show_progress on
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"]))
    return tokenizer


@pytest.mark.parametrize("implementation", [bpe_as_in_the_exercise, bpe_with_progress_bar])
def test_correct_tokenizer_training_passes(implementation):
    result = check_train_bpe_tokenizer(implementation)
    assert result.status == PASSED, result.finding or result.summary


def bpe_limited_alphabet(corpus, vocab_size):
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"], limit_alphabet=20)
    tokenizer.train_from_iterator(corpus, trainer)
    return tokenizer


@pytest.mark.parametrize(
    "implementation, code, phrases",
    [
        (lambda corpus, vocab_size: bpe(corpus, vocab_size, size=80), "ignores_vocab_size", ["does not follow the vocab_size"]),
        (lambda corpus, vocab_size: bpe(corpus, vocab_size, size=30000), "ignores_vocab_size", ["does not follow the vocab_size"]),
        (lambda corpus, vocab_size: bpe(corpus, vocab_size, specials=()), "missing_special_tokens", ["[unk]", "[pad]"]),
        (lambda corpus, vocab_size: bpe(corpus, vocab_size, specials=("[PAD]", "[UNK]")), "special_token_ids", ["other ids"]),
        (lambda corpus, vocab_size: bpe(corpus, vocab_size, pre_tokenizer=None), "missing_pre_tokenizer", ["no pre-tokenizer"]),
        (lambda corpus, vocab_size: bpe(corpus, vocab_size, pre_tokenizer=pre_tokenizers.WhitespaceSplit), "wrong_pre_tokenizer", ["WhitespaceSplit"]),
        (lambda corpus, vocab_size: bpe(corpus, vocab_size, pre_tokenizer=pre_tokenizers.ByteLevel), "wrong_pre_tokenizer", ["ByteLevel"]),
        (lambda corpus, vocab_size: bpe_limited_alphabet(corpus, vocab_size), "vocabulary_differs", ["vocabulary differs"]),
        (lambda corpus, vocab_size: None, "returned_none", ["none"]),
        (lambda corpus, vocab_size: trainers.BpeTrainer(vocab_size=vocab_size), "returned_trainer", ["trainer"]),
        (lambda corpus, vocab_size: Tokenizer(models.BPE()), "untrained", ["never trained"]),
        (lambda corpus, vocab_size: bpe(corpus, vocab_size, unk_token=None), "missing_unk_token",
         ["no unk_token", "vanish", "[unk]"]),
        (lambda corpus, vocab_size: bpe(corpus, vocab_size, unk_token="[PAD]"), "wrong_unk_token", ["'[pad]'"]),
    ],
    ids=["hard-coded-80", "default-size", "no-specials", "specials-swapped", "no-pre-tokenizer", "whitespace-split",
         "byte-level", "limited-alphabet", "no-return", "returns-trainer", "never-trained", "no-unk-token",
         "pad-as-unk-token"],
)
def test_tokenizer_mistakes_are_named(implementation, code, phrases):
    assert_diagnosis(check_train_bpe_tokenizer(implementation), code, *phrases)


def test_a_model_without_unk_token_shows_the_vanished_characters():
    # The trainer learns the same vocabulary with or without unk_token; only encoding unseen
    # characters tells them apart: the reference writes [UNK], the other drops é and the emoji.
    result = check_train_bpe_tokenizer(lambda corpus, vocab_size: bpe(corpus, vocab_size, unk_token=None))
    assert result.code == "missing_unk_token"
    assert "'f', '[UNK]', 's'" in result.finding.expected and result.finding.expected.endswith("'[UNK]']")
    assert "'f', 's'" in result.finding.received and "[UNK]" not in result.finding.received
    assert 'models.BPE(unk_token="[UNK]")' in result.finding.advice


def test_training_on_a_global_corpus_is_named():
    from transformer_lab.tokenizer import TINY_CORPUS

    def train_on_global(corpus, vocab_size):
        return bpe(list(TINY_CORPUS), vocab_size)  # ignores its corpus argument

    assert_diagnosis(check_train_bpe_tokenizer(train_on_global), "ignores_corpus", "corpus argument")


def tokens_via_tokens(tokenizer, words):
    return {word: len(tokenizer.encode(word).tokens) for word in words}


def tokens_via_len(tokenizer, words):
    return {word: len(tokenizer.encode(word)) for word in words}


def tokens_via_batch(tokenizer, words):
    return {word: len(encoding.ids) for word, encoding in zip(words, tokenizer.encode_batch(list(words)))}


@pytest.mark.parametrize("implementation", [tokens_via_tokens, tokens_via_len, tokens_via_batch])
def test_correct_tokens_per_word_passes(implementation):
    result = check_tokens_per_word(implementation)
    assert result.status == PASSED, result.finding or result.summary


def make_global_tokenizer():
    from transformer_lab.tokenizer import TINY_CORPUS, train_bpe_tokenizer

    return train_bpe_tokenizer(list(TINY_CORPUS), 80)


GLOBAL_TOKENIZER = make_global_tokenizer()


@pytest.mark.parametrize(
    "implementation, code, phrases",
    [
        (lambda tokenizer, words: {w: len(w) for w in words}, "counted_characters", ["characters were counted"]),
        (lambda tokenizer, words: [len(tokenizer.encode(w).tokens) for w in words], "returned_list", ["list", "numbers are right"]),
        (lambda tokenizer, words: {w: len(w.split()) for w in words}, "counted_words", ["every word got 1"]),
        (lambda tokenizer, words: {w: len(tokenizer.encode(" ".join(words)).tokens) for w in words}, "counted_whole_list", ["whole list"]),
        (lambda tokenizer, words: {w: tokenizer.encode(w).tokens for w in words}, "values_not_counts", ["not whole numbers"]),
        (lambda tokenizer, words: {w: len(GLOBAL_TOKENIZER.encode(w).tokens) for w in words}, "ignores_tokenizer", ["global tokenizer"]),
        (lambda tokenizer, words: {t: 1 for w in words for t in tokenizer.encode(w).tokens}, "wrong_keys", ["keys"]),
        (lambda tokenizer, words: None, "returned_none", ["none"]),
    ],
    ids=["characters", "list", "words", "whole-list", "token-lists", "global-tokenizer", "token-keys", "no-return"],
)
def test_tokens_per_word_mistakes_are_named(implementation, code, phrases):
    assert_diagnosis(check_tokens_per_word(implementation), code, *phrases)


# ---------------------------------------------------------------------------------------------
# embedding parameters
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "implementation, code",
    [
        (lambda vocab_size, d: vocab_size + d, "added_not_multiplied"),
        (lambda vocab_size, d: vocab_size * d + d, "counted_a_bias"),
        (lambda vocab_size, d: d * d, "width_squared"),
        (lambda vocab_size, d: vocab_size * d / 1e6, "in_millions"),
        (lambda vocab_size, d: torch.tensor(vocab_size * d), "not_a_number"),
    ],
)
def test_embedding_parameter_mistakes_are_named(implementation, code):
    result = check_embedding_parameters(implementation)
    assert result.status == FAILED and result.code == code, result.finding


def test_embedding_parameters_from_the_module_pass():
    def from_module(vocab_size, d):
        return sum(p.numel() for p in torch.nn.Embedding(vocab_size, d).parameters())

    assert check_embedding_parameters(from_module).status == PASSED
    assert check_embedding_parameters(lambda vocab_size, d: vocab_size * d).status == PASSED


# ---------------------------------------------------------------------------------------------
# whole files and the command
# ---------------------------------------------------------------------------------------------

SOLUTION = '''
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
'''


def run_command(*args, cwd=ROOT):
    start = time.perf_counter()
    completed = subprocess.run([sys.executable, "-m", "transformer_lab.selfcheck", *map(str, args)],
                               cwd=cwd, capture_output=True, text=True, timeout=120)
    return completed, time.perf_counter() - start


def test_untouched_starter_reports_not_done_for_every_task_quickly():
    completed, seconds = run_command()  # default path: exercises/homework/starter.py
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr == ""
    assert "Traceback" not in completed.stdout
    for check in selfcheck.CHECKS:
        assert f"[not done yet] {check.exercise}: {check.signature}" in completed.stdout
    assert f"{len(selfcheck.CHECKS)} not done yet (of {len(selfcheck.CHECKS)} checks)" in completed.stdout
    assert seconds < 10, f"the self-check took {seconds:.1f} s (budget 10 s)"


def test_a_finished_file_passes_every_check(tmp_path):
    path = tmp_path / "solution.py"
    path.write_text(SOLUTION)
    completed, seconds = run_command(path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert f"{len(selfcheck.CHECKS)} passed (of {len(selfcheck.CHECKS)} checks)" in completed.stdout
    assert seconds < 10, f"the self-check took {seconds:.1f} s (budget 10 s)"


def test_a_raising_function_is_summarised_in_one_line(tmp_path):
    path = tmp_path / "student.py"
    path.write_text(SOLUTION.replace(
        "    return {word: len(tokenizer.encode(word).tokens) for word in words}",
        "    counts = {}\n    raise KeyError('oops: ' + words[0])\n"))
    report = check_file(path)
    result = next(r for r in report.results if r.name == "tokens_per_word")
    assert result.status == RAISED
    line = 1 + SOLUTION.splitlines().index("def tokens_per_word(tokenizer, words):") + 2
    assert result.summary == f"KeyError at student.py:{line} in tokens_per_word: 'oops: cat'"
    text = format_report(report)
    assert "Traceback" not in text
    assert f"[raised an error] Exercise 8: tokens_per_word(tokenizer, words)\n    KeyError at student.py:{line}" in text


def test_only_selects_checks_and_a_missing_function_is_reported(tmp_path):
    path = tmp_path / "student.py"
    path.write_text(SOLUTION.split("def masked_mean")[0])  # only attention is defined
    completed, _ = run_command(path, "--only", "attention", "masked_mean")
    assert completed.returncode == 1
    assert "[passed] Exercise 1: attention(q, k, v, padding)" in completed.stdout
    assert "[missing] Exercise 3: masked_mean(x, padding)" in completed.stdout
    assert "no function `masked_mean` in the file" in completed.stdout
    assert "accuracy" not in completed.stdout


def test_a_file_that_does_not_import_is_one_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def attention(q, k, v, padding)\n    return q\n")
    completed, _ = run_command(path)
    assert completed.returncode == 2
    assert "Could not load the file: SyntaxError" in completed.stdout
    assert "Traceback" not in completed.stdout and completed.stderr == ""


def test_a_missing_file_is_explained(tmp_path):
    completed, _ = run_command(tmp_path / "nope.py")
    assert completed.returncode == 2
    assert "No such file" in completed.stdout


def test_importing_the_books_function_is_not_a_pass(tmp_path):
    path = tmp_path / "student.py"
    path.write_text(SOLUTION.replace("def masked_mean(x, padding):", "from transformer_lab.pooling import masked_mean\n\n\ndef _unused(x, padding):"))
    report = check_file(path, only=["masked_mean"])
    assert report.results[0].status == FAILED
    assert report.results[0].code == "imported_answer"


def test_every_check_is_documented_on_the_homework_page():
    page = (ROOT / "exercises" / "homework" / "index.md").read_text(encoding="utf-8")
    assert "python -m transformer_lab.selfcheck" in page
    for check in selfcheck.CHECKS:
        assert check.name in page, f"{check.name} is not mentioned on the homework page"


def test_starter_functions_name_their_exercise():
    from transformer_lab.selfcheck import load_module

    module = load_module(STARTER)
    for check in selfcheck.CHECKS:
        with pytest.raises(NotImplementedError, match=rf"^{check.exercise} \({check.name}\)"):
            getattr(module, check.name)(*([None] * getattr(module, check.name).__code__.co_argcount))
