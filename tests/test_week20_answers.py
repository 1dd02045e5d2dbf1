"""transformer_lab_instructor.week20: the answers behind Week 20's checks are the book's models.

The sinusoid table follows its formula; the forward of Task 1 is chapter 4's model without
positions; Task 5's is the model with the table in place of its learned one."""

import torch
from transformer_lab_instructor.week20 import ANSWERS, praise_forward, sines_table

from transformer_lab.char_transformer import PraiseClassifier
from transformer_lab.selfcheck.checks.positions import as_parts, ids_probes


def test_the_sinusoid_table_follows_the_formula():
    table = sines_table(32, 24).float()
    assert table.shape == (32, 24)
    torch.testing.assert_close(table[0], torch.tensor([0.0, 1.0] * 12))  # every clock at 0
    torch.testing.assert_close(
        table[:, 0], torch.sin(torch.arange(32.0))
    )  # one radian a step
    torch.testing.assert_close(table[:, 1], torch.cos(torch.arange(32.0)))
    slowest = 10_000 ** (-22 / 24)
    torch.testing.assert_close(table[:, 22], torch.sin(torch.arange(32.0) * slowest))
    assert len({tuple(row) for row in table.round(decimals=4).tolist()}) == 32


def test_the_reference_forwards_are_the_packages_model():
    torch.manual_seed(3)
    model = PraiseClassifier(use_positions=False).eval()
    for ids, padding in ids_probes():
        torch.testing.assert_close(
            praise_forward(as_parts(model), ids, padding), model(ids, padding).detach()
        )
    torch.manual_seed(4)
    with_table = PraiseClassifier(use_positions=True).eval()
    ids, padding = ids_probes()[-1]
    with torch.no_grad():
        with_table.pos.weight.copy_(sines_table(*with_table.pos.weight.shape).float())
    torch.testing.assert_close(
        ANSWERS["forward_with_sinusoids"]["reference"](as_parts(with_table), ids, padding),
        with_table(ids, padding).detach(),
        atol=1e-5,
        rtol=1e-4,
    )


def test_every_mistake_differs_from_the_answer():
    torch.manual_seed(5)
    parts = as_parts(PraiseClassifier().eval())
    ids, padding = ids_probes()[-1]
    for check in ("forward_without_positions", "forward_with_sinusoids"):
        right = ANSWERS[check]["reference"](parts, ids, padding)
        for code, variant in ANSWERS[check].items():
            if code != "reference":
                wrong = variant(parts, ids, padding)
                assert not torch.allclose(wrong, right, atol=1e-4, equal_nan=True), code
