"""transformer_lab.selfcheck.multihead and the private multi-head reference, checked against
PyTorch's nn.MultiheadAttention."""

import pytest
import torch
from transformer_lab_instructor.live import computed
from transformer_lab_instructor.references import multi_head_attention

from transformer_lab.selfcheck import PASSED, check_multi_head_attention
from transformer_lab.selfcheck.multihead import MISTAKES, mha_probe
from transformer_lab.selfcheck.tensors import close


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
        library = mha(x, x, x, key_padding_mask=padding, need_weights=False)[0]
        mine = multi_head_attention(x, padding, mha)
    assert (mine - library).abs().max() < 1e-5
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
            lambda x, padding, mha: computed(x, padding, mha).float()
        ).status
        == PASSED
    )
