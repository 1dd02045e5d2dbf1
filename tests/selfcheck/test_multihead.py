"""transformer_lab.selfcheck.checks.multihead and the private multi-head reference, checked against
PyTorch's nn.MultiheadAttention."""

import inspect

import pytest
import torch
from transformer_lab_instructor.live import computed
from transformer_lab_instructor.references import multi_head_attention

from transformer_lab import set_classifier
from transformer_lab.selfcheck import PASSED, check_multi_head_attention
from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.multihead import MISTAKES, mha_probe
from transformer_lab.selfcheck.checks.tensors import close


@pytest.mark.parametrize(
    "width, heads, padding",
    [
        (12, 3, None),
        (8, 4, [[False] * 6, [False] * 3 + [True] * 3, [False, True] * 3]),
        (6, 1, [[False, False, True, True, True, True], [False] * 6, [False] * 5 + [True]]),
    ],
)
def test_the_reference_equals_the_layer_in_evaluation_mode(width, heads, padding):
    batch, length = (2, 5) if padding is None else (len(padding), len(padding[0]))
    x, padding, mha = mha_probe(
        seed=7, batch=batch, length=length, width=width, heads=heads, padding=padding
    )
    with torch.no_grad():
        library, library_weights = mha(
            x, x, x, key_padding_mask=padding, average_attn_weights=False
        )
        mine, weights = multi_head_attention(x, padding, mha)
    assert (mine - library).abs().max() < 1e-5
    assert weights.shape == (batch, heads, length, length)
    assert (weights - library_weights).abs().max() < 1e-6
    assert close(computed(x, padding, mha).float(), library, atol=1e-5, rtol=1e-5)


def test_the_probe_has_random_biases_and_leaves_the_global_generator_alone():
    before = torch.random.get_rng_state()
    _, _, mha = mha_probe()
    assert torch.equal(torch.random.get_rng_state(), before)
    assert mha.in_proj_bias.abs().min() > 0 and mha.out_proj.bias.abs().min() > 0
    assert not mha.training


def test_every_mistake_gives_another_output_on_the_probe():
    probe = mha_probe()
    right = computed(*probe)
    outputs = {}
    for mistake in MISTAKES:
        outputs.setdefault(mistake.code, mistake.variant(*probe))
    for i, (code, output) in enumerate(outputs.items()):
        assert not close(output, right, atol=1e-4, rtol=1e-4), code
        for other, output2 in list(outputs.items())[i + 1 :]:
            assert not close(output, output2, atol=1e-4, rtol=1e-4), f"{code} and {other}"


def test_the_reference_passes_its_own_check_and_a_float64_version_too():
    assert check_multi_head_attention(multi_head_attention).status == PASSED
    assert (
        check_multi_head_attention(
            lambda x, padding, mha: (
                computed(x, padding, mha).float(),
                multi_head_attention(x, padding, mha)[1],
            )
        ).status
        == PASSED
    )


def pasted(function, name: str):
    """``function``'s source pasted into a student's file under ``name`` (its module's names
    imported there too)."""
    source = inspect.getsource(function).replace(function.__name__, name, 1)
    namespace = dict(vars(inspect.getmodule(function)))
    exec(compile(source, "student.py", "exec"), namespace)
    return namespace[name]


def test_a_pasted_copy_of_chapter_3s_multi_head_attention_fails():
    """At 1bb8d3d chapter 3's function was Exercise 12's whole answer. The exercise now asks for
    every head's weights as well, which the chapter's function does not return."""
    copy = pasted(set_classifier.multi_head_self_attention, "multi_head_attention")
    result = check_multi_head_attention(copy)
    assert result.status != PASSED and result.code == "weights_missing", result.summary


def test_the_hidden_check_passes_the_reference_and_fails_the_chapters_function():
    with answers.using(answers.HIDDEN):
        assert check_multi_head_attention(multi_head_attention).status == PASSED
        result = check_multi_head_attention(set_classifier.multi_head_self_attention)
    assert result.code == "weights_missing"
