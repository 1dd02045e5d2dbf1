"""transformer_lab.selfcheck.checks.pooling: the masked-mean probes tell every mistake apart."""

import torch

from transformer_lab.pooling import masked_mean
from transformer_lab.selfcheck import RAISED, check_masked_mean
from transformer_lab.selfcheck.checks.pooling import MISTAKES, masked_mean_probe
from transformer_lab.selfcheck.checks.tensors import close


def test_every_mistake_gives_another_answer_on_the_probe():
    x, padding = masked_mean_probe()
    answers = {m.message: m.variant(x, padding) for m in MISTAKES}
    right = masked_mean(x.double(), padding)
    for i, (code, answer) in enumerate(answers.items()):
        assert not close(answer, right), code
        for other, answer2 in list(answers.items())[i + 1 :]:
            assert not close(answer, answer2), f"{code} and {other}"


def test_the_probe_has_a_longest_example_shorter_than_the_padding_and_batch_equal_to_width():
    x, padding = masked_mean_probe()
    lengths = (~padding).sum(1)
    assert lengths.max() < x.shape[1] and len(set(lengths.tolist())) == len(lengths)
    assert x.shape[0] == x.shape[2]


def test_boolean_arithmetic_gets_a_hint():
    def one_minus_bool(x, padding):
        keep = (1 - padding).unsqueeze(-1)
        return (x * keep).sum(1) / keep.sum(1)

    result = check_masked_mean(one_minus_bool)
    assert result.status == RAISED
    assert "~padding" in result.summary and "\n" not in result.summary


def test_a_float64_input_is_fine():
    def mean(x, padding):
        keep = (~padding)[..., None].to(x.dtype)
        return torch.einsum("bld,bl->bd", x, keep[..., 0]) / keep.sum(1)

    assert check_masked_mean(mean).status == "passed"
