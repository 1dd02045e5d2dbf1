"""transformer_lab.selfcheck.checks.debugging: Week 20's Task 4, the repaired forward of the broken model."""

from transformer_lab_instructor.week20 import REPAIRED

from transformer_lab.selfcheck import PASSED, RAISED
from transformer_lab.selfcheck.checks.debugging import check_repaired_forward


def test_the_fully_repaired_forward_passes_and_the_broken_one_raises_with_a_hint():
    assert check_repaired_forward(REPAIRED["reference"]).status == PASSED
    result = check_repaired_forward(REPAIRED["inverted_mask+batch_axis+double_sigmoid"])
    assert result.status == RAISED
    assert "all padding" in result.summary and "is it inverted?" in result.summary


def test_every_bug_left_in_is_named_with_the_smallest_input():
    result = check_repaired_forward(REPAIRED["batch_axis"])
    assert result.code == "batch_axis"
    assert "ids of shape (1, 4)" in result.finding.mistake
    assert result.finding.mistake.startswith("Stage 2 of 4, encoder layout")


def test_a_bug_no_table_knows_is_placed_in_its_stage():
    def doubled_embedding(model, ids, padding):
        from transformer_lab.pooling import masked_mean

        x = 2 * model.embed(ids) + model.pos.weight[: ids.shape[1]]
        x = model.encoder(x.transpose(0, 1), src_key_padding_mask=padding).transpose(0, 1)
        return model.head(masked_mean(x, padding)).squeeze(-1)

    result = check_repaired_forward(doubled_embedding)
    assert result.code == "wrong_stage_embedding"
    assert "one comment of one character" in result.finding.mistake
