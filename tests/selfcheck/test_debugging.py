"""transformer_lab.selfcheck.debugging: Week 20's Task 4, the repaired forward of the broken model."""

from transformer_lab.broken_transformer import broken_forward
from transformer_lab.selfcheck import PASSED, RAISED
from transformer_lab.selfcheck.debugging import check_repaired_forward


def test_the_fully_repaired_forward_passes_and_the_broken_one_raises_with_a_hint():
    assert (
        check_repaired_forward(lambda m, i, p: broken_forward(m, i, p, ())).status == PASSED
    )
    result = check_repaired_forward(lambda m, i, p: broken_forward(m, i, p))
    assert result.status == RAISED
    assert "all padding" in result.summary and "is it inverted?" in result.summary


def test_every_bug_left_in_is_named_with_the_smallest_input():
    result = check_repaired_forward(
        lambda m, i, p: broken_forward(m, i, p, ("batch_axis",))
    )
    assert result.code == "batch_axis"
    assert "ids of shape (1, 4)" in result.finding.mistake
