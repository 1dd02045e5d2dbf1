"""transformer_lab.selfcheck.checks.metrics: the accuracy probe separates every mistake, and a wrong
type is reported together with a wrong value."""

from transformer_lab.selfcheck import ACCURACY_LABELS, ACCURACY_LOGITS, check_accuracy
from transformer_lab.selfcheck.checks.metrics import MISTAKES, _correct


def accuracy_variants(logits, labels) -> dict[str, float]:
    """What each typical mistake returns on ``logits``/``labels``, and the right value."""
    values = {"correct": _correct(logits, labels).mean().item()}
    for mistake in MISTAKES:  # integer division's 0.0 is told apart by _explain_zero
        values[mistake.code] = float(mistake.variant(logits, labels))
    return values


def test_the_probe_separates_every_mistake():
    values = accuracy_variants(ACCURACY_LOGITS, ACCURACY_LABELS)
    assert len({round(v, 6) for v in values.values()}) == len(values), values
    assert not (ACCURACY_LOGITS == 0).any()


def test_a_tensor_with_the_right_value_says_the_value_is_right():
    result = check_accuracy(
        lambda logits, labels: ((logits > 0).float() == labels).float().mean()
    )
    assert (
        result.code == "returned_tensor"
        and "value itself is right" in result.finding.mistake
    )


def test_a_tensor_with_a_wrong_value_names_both_problems():
    result = check_accuracy(
        lambda logits, labels: ((logits > 0.5).float() == labels).float().mean()
    )
    assert result.code == "returned_tensor"
    assert (
        "value is wrong too" in result.finding.mistake
        and "thresholded at 0.5" in result.finding.mistake
    )


def test_an_int_is_called_an_int():
    result = check_accuracy(lambda logits, labels: 1)
    assert result.code == "not_a_float"
    assert result.finding.mistake.startswith("An int came back")


def test_integer_labels_work():
    assert (
        check_accuracy(
            lambda logits, labels: float(
                ((logits > 0).long() == labels.long()).float().mean()
            )
        ).status
        == "passed"
    )
