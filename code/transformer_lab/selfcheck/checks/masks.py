"""Stretch exercise: ``causal_padding_mask(padding) -> (B, L, L)``, a decoder's mask with padding.

Query i may read key j only when j <= i and key j is real; the mask is True where it may not.

The chapters do not show this function: the right mask and each mistake's come from
``answers.py`` (stored for the public inputs, the instructor's code in the hidden checks).
"""

from __future__ import annotations

import functools

import torch

from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.tensors import (
    Evidence,
    check_unchanged,
    checker,
    require_shape,
    require_tensor,
    smallest_input_note,
)
from transformer_lab.selfcheck.core import Mistake
from transformer_lab.selfcheck.execution import StudentFunction
from transformer_lab.selfcheck.transport import bounded_repr

NAME = "causal_padding_mask"


# B = 3 and L = 5 differ and every example has a real first token. Padding at the end alone hides
# mistakes (the future already covers those keys for the earlier queries), so two examples have
# a padded key in the middle: each mistake below gives another mask.
def _padding(*rows: str) -> torch.Tensor:
    """A padding mask (B, L) from one string per example: '1' where the token is padding."""
    return torch.tensor([[c == "1" for c in row] for row in rows])


PROBE_PADDING = _padding("00011", "01000", "00101")
SECOND_PADDING = _padding("0011111", "0000001")


def probe_paddings() -> list[torch.Tensor]:
    """The paddings the check runs on: the two public ones, or (hidden checks) two drawn afresh."""
    return (
        drawn_paddings()
        if answers.mode() == answers.HIDDEN
        else [PROBE_PADDING, SECOND_PADDING]
    )


def drawn_paddings() -> list[torch.Tensor]:
    """Two paddings of the public ones' kind, 3 examples of 5 and 2 of 7, each with a real first
    token and, by construction, an example with a padded key in the middle (a real key after
    it) and one padded at the end."""
    g = torch.Generator().manual_seed(answers.fresh_seed(0))
    drawn = []
    for batch, length in ((3, 5), (2, 7)):
        padding = torch.randint(0, 5, (batch, length), generator=g) < 2
        middle = int(torch.randint(1, length - 1, (), generator=g))
        padding[0, middle], padding[0, middle + 1] = True, False
        padding[1, -1] = True
        padding[:, 0] = False
        drawn.append(padding)
    return drawn


_mistake = functools.partial(answers.mistake, NAME)

MISTAKES: list[Mistake] = [
    _mistake(
        "padding_ignored",
        "only the future is blocked: padded keys are still visible",
        "either reason blocks a key: combine the future and the padding with a logical or",
    ),
    _mistake(
        "causal_missing",
        "only the padding is blocked: every query can still read later tokens",
        "also block the keys after each query: the part of an (L, L) matrix above its diagonal",
    ),
    _mistake(
        "blocked_diagonal",
        "the diagonal is blocked too: a token may read itself (j = i)",
        "triu(diagonal=1) blocks j > i only; triu() with diagonal=0 also blocks j = i",
    ),
    _mistake(
        "causal_off_by_one",
        "the causal mask is one off: each token may also read the next one (triu(diagonal=2))",
        "key j is the future of query i when j > i: triu(diagonal=1), so j = i + 1 is blocked",
    ),
    _mistake(
        "causal_transposed",
        "the past is blocked instead of the future (tril instead of triu)",
        "the future of query i is the keys j > i: the upper triangle, triu(diagonal=1)",
    ),
    _mistake(
        "inverted_mask",
        "the mask is inverted: True marks what a query may read",
        "True means 'must not attend' (as key_padding_mask and attn_mask in PyTorch)",
    ),
    _mistake(
        "padding_inverted",
        "the padding was inverted (~padding): real keys are blocked, padded ones visible",
        "padding is already True where a key must be hidden: use it as it is",
    ),
    _mistake(
        "padding_on_queries",
        "the padding was applied to the queries (rows) instead of the keys (columns)",
        "padding[:, None, :] puts the mask on the key axis: every query row hides the same padded keys",
    ),
    _mistake(
        "padding_on_both_axes",
        "padded queries were blocked as well, so their rows hide every key (softmax "
        "of a row of −∞ is NaN)",
        "padding hides keys (columns) only; a padded query may still read the real keys before it",
    ),
    _mistake(
        "combined_with_and",
        "future and padding were combined with & (and): a key is blocked only when it "
        "is both",
        "a key is hidden when it is in the future OR padding: use |",
    ),
]

reference = answers.reference(NAME)

# The smallest paddings first (one example, its rows as '01/00'), for a "differs" message.
SMALL_PROBES = [(_padding(row),) for row in ("0", "00", "01", "000", "001")]
SHAPE = Mistake(
    "mask_shape",
    "the mask has the wrong shape",
    "one row per query and one column per key, for every example: (B, L, L)",
)
NO_BATCH_AXIS = Mistake(
    "missing_batch_axis",
    "the mask has no batch axis: (L, L) instead of (B, L, L), so it cannot hold "
    "each example's padding",
    "give the future a batch axis and the padding a query axis: broadcasting then gives (B, L, L)",
)


def _check_once(student: StudentFunction, padding: torch.Tensor) -> None:
    b, length = padding.shape
    expected = reference(padding)
    returned = student.call(padding.clone())
    check_unchanged([padding], returned.args, ["padding"])
    shape = (b, length, length)
    result = require_tensor(returned.result, "the mask", shape, "mask")
    wanted = f"shape ({b}, {length}, {length}) = (B, L, L)"
    require_shape(result, shape, wanted, SHAPE, {(length, length): NO_BATCH_AXIS})
    if result.dtype != torch.bool:
        _explain_dtype(result, expected)
    if not torch.equal(result, expected):
        _explain_pattern(student, padding, result, expected)


def _explain_dtype(result: torch.Tensor, expected: torch.Tensor) -> None:
    """Fail for a mask that is not bool, saying whether its pattern is right."""
    dtype = Evidence(
        f"dtype torch.bool, example {len(expected) - 1}: {_rows(expected[-1])}",
        f"dtype {result.dtype}",
    )
    values = result.detach().double()
    blocked = values == float("-inf")
    if torch.equal(blocked, expected) and bool((values[~expected] == 0).all()):
        dtype.fail(
            "additive_float_mask",
            "a float mask of 0 and −∞ came back; the exercise asks for a bool mask "
            "(True = blocked)",
            "return the boolean mask itself; masked_fill turns it into −∞ scores later",
        )
    if torch.equal(values != 0, expected):
        dtype.fail(
            "not_bool",
            f"the mask has dtype {result.dtype}, not torch.bool (the pattern is right)",
            "build it from bool tensors, or add .bool()",
        )
    dtype.fail(
        "not_bool",
        f"the mask has dtype {result.dtype}, not torch.bool",
        "True where query i must not read key j, as a bool tensor",
    )


def _explain_pattern(student: StudentFunction, padding, result, expected) -> None:
    """Fail for a wrong bool mask: a known mistake, else the smallest input that goes wrong."""
    worst = int((result != expected).flatten(1).sum(1).argmax())
    shown = Evidence(
        f"example {worst}: {_rows(expected[worst])}",
        f"example {worst}: {_rows(result[worst])}",
    )
    shown.diagnose(result, MISTAKES, (padding,), lambda a, b: torch.equal(a, b.to(a.dtype)))
    shown.fail(
        "mask_differs",
        "the mask differs: query i must not read key j when j > i or key j is padding"
        + smallest_input_note(
            student,
            reference,
            SMALL_PROBES,
            lambda a, b: (
                isinstance(a, torch.Tensor)
                and a.shape == b.shape
                and torch.equal(a.bool(), b)
            ),
            lambda padding: f"padding = {padding.tolist()}",
            lambda mask: (
                _rows(mask[0])
                if isinstance(mask, torch.Tensor) and mask.dim() == 3
                else bounded_repr(mask, 60)
            ),
        ),
        "redo the smallest input by hand: which keys are in the future of each query, and which are padding?",
    )


def _rows(mask: torch.Tensor) -> str:
    """The (L, L) mask as rows of 1 (blocked) and 0, e.g. '01111/00111/...'."""
    return "/".join("".join("1" if v else "0" for v in row) for row in mask.tolist())


@checker("Exercise 11", "causal_padding_mask(padding)", optional=True)
def check_causal_padding_mask(student: StudentFunction) -> None:
    """Check ``causal_padding_mask(padding) -> (B, L, L)`` against the private reference."""
    for padding in probe_paddings():
        _check_once(student, padding)
