"""transformer_lab.selfcheck.execution: calling student code, spotting library attention, and
describing what came back."""

import pytest
import torch
import torch.nn.functional as F
from torch.nn.functional import scaled_dot_product_attention as sdpa_alias

from transformer_lab.selfcheck.core import StudentRaised
from transformer_lab.selfcheck.execution import (
    LocalFunction,
    Opaque,
    cotangent,
    execute,
    execute_gradient,
    library_spy,
    static_library_use,
    type_name,
)


def uses_the_alias(q, k, v):
    return sdpa_alias(q, k, v)


def uses_the_attribute(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


def uses_the_layer(x):
    return torch.nn.MultiheadAttention(4, 1, batch_first=True)(x, x, x)[0]


def checks_the_type_only(mha):
    assert isinstance(mha, torch.nn.MultiheadAttention)
    return mha.num_heads


def test_static_detection_finds_attributes_and_aliases_but_not_type_checks():
    assert static_library_use(uses_the_alias) == ["F.scaled_dot_product_attention"]
    assert static_library_use(uses_the_attribute) == ["F.scaled_dot_product_attention"]
    assert static_library_use(checks_the_type_only) == []


def test_the_spy_records_calls_made_anywhere_and_restores_the_library():
    q = torch.randn(1, 2, 4)
    with library_spy() as used:
        uses_the_attribute(q, q, q)
        uses_the_layer(q)
    assert used[0] == "F.scaled_dot_product_attention" and "nn.MultiheadAttention" in used
    assert F.scaled_dot_product_attention is sdpa_alias


def test_execute_returns_the_arguments_after_the_call():
    def clears(values):
        values.clear()
        return 1

    returned = execute(clears, [[1, 2]])
    assert returned.result == 1 and returned.args == [[]]


@pytest.mark.parametrize(
    "error, text", [(SystemExit(0), "SystemExit"), (ValueError("bad"), "ValueError")]
)
def test_execute_summarises_errors_and_exits(error, text):
    def raises():
        raise error

    with pytest.raises(StudentRaised, match=text):
        execute(raises, [])


def test_not_implemented_passes_through_and_a_keyboard_interrupt_only_in_a_worker():
    def unfinished():
        raise NotImplementedError("to do")

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(NotImplementedError):
        execute(unfinished, [])
    with pytest.raises(KeyboardInterrupt):
        execute(interrupted, [])
    with pytest.raises(StudentRaised, match="KeyboardInterrupt"):
        execute(interrupted, [], catch_interrupt=True)


def test_the_gradient_report_names_each_input():
    report = execute_gradient(
        lambda a, b: a * 2, [torch.ones(2), torch.ones(2)], ["a", "b"], "self"
    )
    assert report.requires_grad and report.reached == {"a": "finite", "b": "none"}
    # the gradient of <c, 2a> for the cotangent c drawn with the seed (0 by default) is 2c,
    # with c rounded to a's float32 on its way back
    assert torch.equal(report.gradients["a"], 2 * cotangent((2,), 0).float().double())
    assert set(report.gradients) == {"a"}
    assert not execute_gradient(
        lambda a: a.detach(), [torch.ones(2)], ["a"], "self"
    ).requires_grad


def test_type_names_are_short_and_opaque_values_keep_their_type():
    assert type_name(3) == "int" and type_name(torch.ones(1)) == "torch.Tensor"
    assert type_name(Opaque("generator", "<generator>")) == "generator"


def test_a_local_function_knows_its_library_use():
    assert LocalFunction(uses_the_alias).library_names == ["F.scaled_dot_product_attention"]


def _raised(function, args, hints=()):
    with pytest.raises(StudentRaised) as caught:
        execute(function, args, hints=hints)
    return caught.value.line


def test_the_dot_t_hint_fires_only_on_a_tensor_that_is_not_2d_and_then_first():
    def batched(x):
        return x.T @ x  # (2, 3, 4).T is (4, 3, 2)

    def matrix(x):
        return x.T @ torch.zeros(4, 5)  # a 2-D .T: an ordinary transpose, wrong sizes

    for _ in range(2):  # PyTorch warns once per process; the spy sees every call
        assert ".T on a 3-D tensor" in _raised(batched, [torch.zeros(2, 3, 4)])
    assert ".T on a 3-D tensor" not in _raised(matrix, [torch.zeros(2, 3)])
    task = [(r"size of tensor", "the task's own cause")]
    # a batched .T seen in this very call is the root cause: the shape error comes after it
    assert ".T on a 3-D tensor" in _raised(batched, [torch.zeros(2, 3, 4)], task)
    # without one, the task's own hint speaks
    shapes = [(r"cannot be multiplied", "the task's own cause")]
    assert "hint: the task's own cause" in _raised(matrix, [torch.zeros(2, 3)], shapes)
    assert not hasattr(torch.Tensor.__dict__.get("T"), "fget"), "the spy is removed after"
