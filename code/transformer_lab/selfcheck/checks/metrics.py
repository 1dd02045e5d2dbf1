"""Exercise 1: ``accuracy(logits, labels) -> float``, the share of examples classified correctly."""

from __future__ import annotations

import numbers

import torch

from transformer_lab import metrics as reference
from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.tensors import (
    Evidence,
    check_unchanged,
    checker,
    shape_text,
    smallest_input_note,
)
from transformer_lab.selfcheck.core import Mistake, article, fail, fail_if_none, first_match
from transformer_lab.selfcheck.execution import StudentFunction, type_name
from transformer_lab.selfcheck.transport import bounded_repr

# Chosen so that every typical mistake gives a different number (the tests assert this); the
# logit 1.0 with label 1 tells "compared the logits with the labels" from "rounded down to 0".
ACCURACY_LOGITS = torch.tensor(
    [0.6, 0.3, -0.2, -1.5, 0.7, 0.1, -0.4, 1.0, -3.0, 0.4, 0.2, -0.7]
)
ACCURACY_LABELS = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0])


def _share(predictions: torch.Tensor, labels: torch.Tensor) -> float:
    return (predictions.double() == labels.double()).double().mean().item()


def _correct(logits, labels) -> torch.Tensor:
    return ((logits > 0).double() == labels.double()).double()


MISTAKES: list[Mistake] = [
    Mistake(
        "threshold_logits_at_half",
        "the logits were thresholded at 0.5; a logit of 0 is probability 0.5",
        "predict positive when logit > 0 (or sigmoid(logit) > 0.5)",
        lambda logits, labels: _share(logits > 0.5, labels),
    ),
    Mistake(
        "all_positive",
        "every example was predicted positive: the sigmoid was compared with 0, or applied "
        "twice (sigmoid(sigmoid(x)) > 0.5 always holds)",
        "threshold the logits at 0, or the probabilities (one sigmoid) at 0.5",
        lambda logits, labels: labels.double().mean().item(),
    ),
    Mistake(
        "all_negative",
        "every example was predicted negative: a softmax over the batch (its probabilities "
        "share 1 between all the examples, so none reaches 0.5), or a threshold above every "
        "logit",
        "one sigmoid per logit, or no sigmoid at all: predict positive when logit > 0",
        lambda logits, labels: 1 - labels.double().mean().item(),
    ),
    Mistake(
        "error_rate",
        "the error rate (1 − accuracy) came back: the comparison or the predictions are inverted",
        "count predictions that equal the labels",
        lambda logits, labels: 1 - _correct(logits, labels).mean().item(),
    ),
    Mistake(
        "percentage",
        "a percentage came back instead of a fraction between 0 and 1",
        "drop the * 100",
        lambda logits, labels: 100 * _correct(logits, labels).mean().item(),
    ),
    Mistake(
        "count_correct",
        "the number of correct predictions came back, not the fraction",
        "divide by len(labels), or use .mean()",
        lambda logits, labels: _correct(logits, labels).sum().item(),
    ),
    Mistake(
        "compared_logits_with_labels",
        "the raw logits were compared with the labels: a logit is almost never "
        "exactly 0 or 1",
        "turn logits into predictions first: logits > 0",
        lambda logits, labels: _share(logits, labels),
    ),
    Mistake(
        "rounded_logits",
        "the logits were rounded (round(logit) is 0 or 1 only between −0.5 and 1.5); "
        "a logit is not a probability",
        "threshold the logits at 0, or round the sigmoid",
        lambda logits, labels: _share(torch.round(logits), labels),
    ),
]


def _same_number(received: object, wrong: object) -> bool:
    return abs(float(received) - float(wrong)) < 1e-6


def _wrong_value_note(value: float, logits, labels, expected: float) -> str:
    """'' if ``value`` is right, else what is wrong with it too (a named mistake if one fits)."""
    if abs(value - expected) < 1e-6:
        return " (the value itself is right)"
    match = first_match(value, MISTAKES, (logits, labels), _same_number)
    return (
        f", and the value is wrong too: {match.message}"
        if match
        else ", and the value is wrong too"
    )


# The smallest inputs first, for a "differs" message that names where the answer goes wrong.
SMALL_PROBES = [
    (torch.tensor([1.0]), torch.tensor([1.0])),
    (torch.tensor([-1.0]), torch.tensor([0.0])),
    (torch.tensor([1.0]), torch.tensor([0.0])),
    (torch.tensor([-1.0]), torch.tensor([1.0])),
    (torch.tensor([1.0, -1.0]), torch.tensor([1.0, 1.0])),
    (torch.tensor([2.0, 0.3, -0.2]), torch.tensor([1.0, 0.0, 0.0])),
]


def _explain_zero(student: StudentFunction, expected: float, note: str = "") -> None:
    """A 0.0 where some predictions are right: rounded down (then an all-right input gives
    1.0), or nothing was ever counted as right."""
    perfect = student.call(torch.tensor([2.0, -2.0]), torch.tensor([1.0, 0.0])).result
    try:
        whole = abs(float(perfect) - 1.0) < 1e-6
    except (TypeError, ValueError, RuntimeError):
        whole = False
    shown = Evidence(f"{expected:.4f}", "0.0000", note)
    if whole:
        shown.fail(
            "integer_division",
            "the accuracy was rounded down to a whole number: // (or int()) instead of / "
            "(0.0 here, and 1.0 where every prediction is right)",
            "divide with /, e.g. correct / len(labels)",
        )
    shown.fail(
        "nothing_counted_right",
        "the accuracy is 0.0 although some predictions are right, and it stays below 1 where "
        "all are: no prediction is ever counted as right (a probability or a raw logit "
        "compared with a 0/1 label is never equal to it)",
        "predictions = logits > 0, then (predictions.float() == labels.float()).float().mean()",
    )


def _check_once(student: StudentFunction, logits, labels):
    expected = reference.accuracy(logits, labels)
    returned = student.call(logits.clone(), labels.clone())
    check_unchanged([logits, labels], returned.args, ["logits", "labels"])
    result = returned.result
    want = f"{expected:.4f} (type float)"
    fail_if_none(result, want, "end with `return ...`")
    kind = type_name(result)
    if isinstance(result, torch.Tensor) and result.numel() != 1:
        fail(
            "returned_tensor",
            "a tensor of many numbers came back instead of one Python float",
            want,
            f"a tensor of shape {shape_text(result)}",
            "average the correct predictions: .mean().item()",
        )
    tensor = isinstance(result, torch.Tensor)
    # numpy.float64 is a float: fine.
    if tensor or (kind.startswith("numpy.") and not isinstance(result, float)):
        value = float(result.detach().reshape(-1)[0]) if tensor else float(result)
        fail(
            "returned_tensor" if tensor else "returned_numpy",
            ("a tensor" if tensor else article(kind))
            + " came back instead of a Python float"
            + _wrong_value_note(value, logits, labels, expected),
            want,
            f"{value:.4f} (type {kind})",
            "end with .item() or float(...)" if tensor else "wrap it in float(...)",
        )
    number = isinstance(result, numbers.Real) and not isinstance(result, bool)
    if isinstance(result, float):
        if abs(result - expected) < 1e-6:
            return
        shown = Evidence(f"{expected:.4f}", f"{result:.4f}")
    elif number:
        note = f" (and {article(kind)} came back, not a float)"
        shown = Evidence(want, f"{result} (type {kind})", note)
    if number:
        shown.diagnose(result, MISTAKES, (logits, labels), _same_number)
        if result == 0:
            _explain_zero(student, expected, shown.note)
    if not isinstance(result, float):
        fail(
            "not_a_float",
            f"{article(kind)} came back instead of a Python float",
            want,
            bounded_repr(result, 80),
            "return a float between 0 and 1, e.g. with .item()",
        )
    fail(
        "accuracy_differs",
        "the accuracy differs from the share of (logit > 0) == label"
        + smallest_input_note(
            student,
            reference.accuracy,
            SMALL_PROBES,
            lambda a, b: isinstance(a, numbers.Real) and abs(float(a) - b) < 1e-6,
            lambda logits, labels: (
                f"logits {[round(v, 4) for v in logits.tolist()]}, labels {labels.tolist()}"
            ),
            lambda value: (
                f"{float(value):.4f}"
                if isinstance(value, numbers.Real)
                else bounded_repr(value, 40)
            ),
        ),
        f"{expected:.4f}",
        f"{result:.4f}",
        "predictions = logits > 0; compare with labels; take the mean",
    )


@checker("Exercise 1", "accuracy(logits, labels)")
def check_accuracy(student: StudentFunction) -> None:
    """Check ``accuracy(logits, labels) -> float`` against the package's version."""
    _check_once(student, ACCURACY_LOGITS, ACCURACY_LABELS)
    g = torch.Generator().manual_seed(answers.fresh_seed(40))
    logits = torch.randn(64, generator=g) * 2
    logits = logits[logits.abs() > 1e-3]  # never exactly on the threshold
    labels = (torch.rand(len(logits), generator=g) < 0.6).float()
    _check_once(student, logits, labels)
    _check_once(student, logits, labels.long())  # integer labels work too
