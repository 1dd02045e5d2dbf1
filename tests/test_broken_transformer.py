"""transformer_lab.broken_transformer: the planted bugs are there, and only they (checked
against the instructor's repaired forward and bug variants, which the student package lacks)."""

import pytest
import torch
from transformer_lab_instructor.week20 import REPAIRED

from transformer_lab.broken_transformer import BrokenPraiseClassifier
from transformer_lab.char_transformer import PAD_ID, PraiseClassifier, encode_texts

BUGS = "inverted_mask+batch_axis+double_sigmoid"


def broken_forward(model, ids, padding, bugs):
    return REPAIRED["+".join(bugs) if isinstance(bugs, tuple) else bugs or "reference"](
        model, ids, padding
    )


def models():
    torch.manual_seed(0)
    broken = BrokenPraiseClassifier().eval()
    torch.manual_seed(0)
    return broken, PraiseClassifier().eval()


def test_without_its_bugs_the_broken_model_is_chapter_4s_model():
    broken, book = models()
    ids = encode_texts(["fast fix, thanks", "not good at all, slow and late"])
    padding = ids == PAD_ID
    assert padding.any() and not padding.all(dim=1).any()
    with torch.no_grad():
        assert torch.allclose(
            broken_forward(broken, ids, padding, ""), book(ids), atol=1e-5
        )


def test_the_package_ships_no_repaired_forward():
    import transformer_lab.broken_transformer as module

    assert not hasattr(module, "broken_forward") and not hasattr(module, "BUGS")


def test_the_broken_forward_is_its_forward_and_the_inverted_mask_raises():
    broken, _ = models()
    ids = encode_texts(["fast fix, thanks", "not good at all, slow and late"], length=12)
    with pytest.raises(ValueError, match="all padding"):
        broken(
            ids
        )  # both fill their window: the inverted mask calls every character padding
    with torch.no_grad():
        short = ids[:, :10].clone()
        short[:, 0] = PAD_ID  # padding in every row, so the inverted mask leaves a real key
        assert torch.allclose(
            broken(short), broken_forward(broken, short, short == PAD_ID, BUGS), atol=1e-6
        )


def test_the_half_repair_inverts_only_the_encoders_mask():
    broken, _ = models()
    ids = encode_texts(["fast fix, thanks", "not good at all, slow and late"])
    padding = ids == PAD_ID
    with torch.no_grad():
        half = broken_forward(broken, ids, padding, ("encoder_mask_inverted",))
        repaired = broken_forward(broken, ids, padding, "")
    assert half.shape == repaired.shape and torch.isfinite(half).all()
    assert not torch.allclose(half, repaired, atol=1e-4)
