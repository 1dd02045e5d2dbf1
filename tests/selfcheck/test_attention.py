"""transformer_lab.selfcheck.checks.attention: Exercise 1's probes tell every mistake apart, and the
messages the issue found misleading now name the mistake that was made."""

import math

import torch
import torch.nn.functional as F

from selfcheck.mutants import attention_masked_fill
from transformer_lab.selfcheck import NOT_DONE, PASSED, RAISED, check_attention
from transformer_lab.selfcheck.checks.attention import (
    LARGE_PROBES,
    OTHER_WEIGHT_MISTAKES,
    RETURNED_WEIGHT_MISTAKES,
    attention_probe,
    weight_mistakes,
)
from transformer_lab.selfcheck.checks.tensors import close


def test_single_mistakes_give_different_weights_on_the_probe():
    probe = attention_probe()
    q, k, v, padding = probe
    reference = torch.softmax(
        (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
            padding[:, None, :], float("-inf")
        ),
        -1,
    )
    singles = [m for m in weight_mistakes() if "+" not in m.code]
    by_message = {}
    for mistake in singles:
        by_message.setdefault((mistake.code, mistake.message), mistake.variant(*probe))
    assert len(by_message) >= 20
    weights = list(by_message.items())
    # every example of the probe has padding, so both of these make every weight NaN there;
    # check_attention tells them apart on a probe without padding (_name_the_infinity)
    told_apart_later = {"mask_times_inf", "mask_with_plus_inf"}
    for i, ((code, message), w) in enumerate(weights):
        assert not close(w, reference), message
        for (other_code, other), w2 in weights[i + 1 :]:
            if {code, other_code} == told_apart_later:
                continue
            assert not close(w, w2), f"{message!r} and {other!r} give the same weights"


def test_keys_and_values_have_different_widths_and_every_size_differs():
    q, k, v, padding = attention_probe()
    sizes = [q.shape[0], q.shape[1], k.shape[1], q.shape[2], v.shape[2]]
    assert len(set(sizes)) == len(sizes)


def test_returned_weight_mistakes_and_other_mistakes_differ_from_the_right_weights():
    probe = attention_probe()
    right = attention_masked_fill(*probe)[1].double()
    for mistake in RETURNED_WEIGHT_MISTAKES + OTHER_WEIGHT_MISTAKES:
        assert not close(mistake.variant(*probe), right), mistake.code


def test_unmasked_weights_next_to_a_right_output_are_not_called_a_mask_without_effect():
    def attention(q, k, v, padding):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        masked = torch.softmax(
            scores.masked_fill(padding[:, None, :], float("-inf")), dim=-1
        )
        return masked @ v, torch.softmax(scores, dim=-1)

    result = check_attention(attention)
    assert result.code == "returned_unmasked_weights"
    assert (
        "output is right" in result.finding.mistake
        and "no effect" not in result.finding.mistake
    )
    assert "masked_fill returns a new tensor" not in result.finding.advice


def test_a_softmax_over_the_queries_after_a_right_mask_says_nothing_about_the_mask():
    def attention(q, k, v, padding):
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
            padding[:, None, :], float("-inf")
        )
        weights = torch.softmax(scores, dim=1)
        return weights @ v, weights

    result = check_attention(attention)
    assert result.code == "softmax_over_queries"
    assert "mask" not in result.finding.mistake and "zeroed" not in result.finding.mistake


def attention_dot_t(q, k, v, padding):
    weights = torch.softmax(
        (q @ k.T / math.sqrt(q.shape[-1])).masked_fill(padding[:, None, :], float("-inf")),
        -1,
    )
    return weights @ v, weights


def attention_flat_padding(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores.masked_fill(padding, float("-inf")), -1)
    return weights @ v, weights


def test_errors_are_one_line_with_a_hint():
    for implementation, hint in [
        (attention_dot_t, "k.transpose(-2, -1)"),
        (attention_flat_padding, "padding[:, None, :]"),
    ]:
        result = check_attention(implementation)
        assert result.status == RAISED
        assert "\n" not in result.summary
        assert result.summary.startswith("RuntimeError at test_attention.py:")
        assert hint in result.summary


def test_unfinished_attention_is_not_done():
    def attention(q, k, v, padding):
        raise NotImplementedError("Exercise 1 (attention): to do")

    result = check_attention(attention)
    assert result.status == NOT_DONE
    assert "Exercise 1 (attention): to do" in result.summary


def test_a_library_call_is_named_even_when_it_is_never_reached():
    def attention(q, k, v, padding, fused=False):
        if fused:
            return F.scaled_dot_product_attention(q, k, v), None
        return attention_masked_fill(q, k, v, padding)

    result = check_attention(attention)
    assert result.code == "library_attention"
    assert (
        "F.scaled_dot_product_attention" in result.finding.mistake
        and "by hand" in result.finding.mistake
    )


def test_the_library_spies_are_removed_after_a_local_check():
    original = F.scaled_dot_product_attention
    check_attention(attention_masked_fill)
    assert F.scaled_dot_product_attention is original
    assert torch.nn.MultiheadAttention.forward.__qualname__ == "MultiheadAttention.forward"


def test_the_large_score_probes_are_finite_for_the_reference_and_not_for_a_naive_softmax():
    for q, k, v, padding in LARGE_PROBES:
        output, weights = attention_masked_fill(q, k, v, padding)
        assert torch.isfinite(output).all()
        assert not torch.isfinite(
            torch.exp(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))
        ).all()


def test_a_right_attention_built_from_helpers_passes():
    def scores_of(q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])

    def attention(q, k, v, padding):
        weights = torch.softmax(
            scores_of(q, k).masked_fill(padding[:, None, :], float("-inf")), dim=-1
        )
        return weights @ v, weights

    assert check_attention(attention).status == PASSED
