"""Exercise 7: ``embedding_parameters(vocab_size, d) -> int``, the size of an embedding table."""

from __future__ import annotations

import math
import numbers
import random

from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.tensors import Evidence, checker, smallest_input_note
from transformer_lab.selfcheck.core import Mistake, article, fail
from transformer_lab.selfcheck.execution import StudentFunction, type_name
from transformer_lab.selfcheck.transport import bounded_repr

TABLE = "an embedding is a table of shape (vocab_size, d), and nothing else"
# 7 x 3: every mistake below gives another number.
PROBES = [(80, 128), (50_000, 768), (7, 3)]


def _count(code: str, message: str, variant) -> Mistake:
    return Mistake(code, message, TABLE, variant)


MISTAKES: list[Mistake] = [
    _count(
        "added_not_multiplied",
        "the sizes were added; a (vocab_size, d) table holds vocab_size × d numbers",
        lambda vocab_size, d: vocab_size + d,
    ),
    _count(
        "counted_a_bias",
        "d numbers too many: a bias, or one row too many ((vocab_size + 1) × d, a row for "
        "padding?); an embedding is a lookup table with no bias, and [PAD] is already one of "
        "the vocab_size tokens",
        lambda vocab_size, d: vocab_size * d + d,
    ),
    _count(
        "subtracted_special_tokens",
        "the special tokens were taken out ((vocab_size - 2) × d): [UNK] and [PAD] have rows "
        "of the table like every other token",
        lambda vocab_size, d: (vocab_size - 2) * d,
    ),
    _count(
        "width_squared",
        "the count is d × d; the table has one row per token: vocab_size × d",
        lambda vocab_size, d: d * d,
    ),
    _count(
        "vocab_squared",
        "the count is vocab_size × vocab_size; each token's row has d numbers",
        lambda vocab_size, d: vocab_size * vocab_size,
    ),
    _count(
        "counted_twice",
        "the table was counted twice (an input and an output table?); the question is about "
        "one embedding table",
        lambda vocab_size, d: 2 * vocab_size * d,
    ),
    _count(
        "counted_bytes",
        "bytes were counted (4 per float32 number), not parameters",
        lambda vocab_size, d: 4 * vocab_size * d,
    ),
    _count(
        "in_millions",
        "the count came back in millions; return the plain number of parameters",
        lambda vocab_size, d: vocab_size * d / 1e6,
    ),
]


def _same(received, wrong) -> bool:
    return math.isclose(float(received), float(wrong))


# The smallest sizes first: the first one that goes wrong is the one a student can redo by hand.
SMALL_SIZES = [
    (v, d) for total in range(2, 9) for v in range(1, total) for d in [total - v]
]


def probes() -> list[tuple[int, int]]:
    """``PROBES``, or (hidden checks) three sizes drawn afresh from the same ranges."""
    if answers.mode() != answers.HIDDEN:
        return PROBES
    draw = random.Random(answers.fresh_seed(0))
    return [(draw.randint(3, 60_000), draw.randint(2, 1024)) for _ in range(3)]


@checker("Exercise 7", "embedding_parameters(vocab_size, d)")
def check_embedding_parameters(student: StudentFunction) -> None:
    """Check ``embedding_parameters(vocab_size, d) -> int`` against the package's version."""
    from transformer_lab.tokenizer import embedding_parameters

    for vocab_size, d in probes():
        expected = embedding_parameters(vocab_size, d)
        result = student.call(vocab_size, d).result
        if isinstance(result, bool) or not isinstance(result, numbers.Real):
            kind = type_name(result)
            fail(
                "not_a_number",
                f"{article(kind)} came back instead of a number",
                f"{expected:,} (an int)",
                bounded_repr(result, 80),
                "return vocab_size * d"
                + (" as a Python int: .item()" if kind == "torch.Tensor" else ""),
            )
        if result == expected:
            continue
        shown = Evidence(f"{expected:,} for vocab_size={vocab_size}, d={d}", f"{result:,}")
        shown.diagnose(result, MISTAKES, (vocab_size, d), _same)
        shown.fail(
            "parameters_differ",
            "the count differs from vocab_size × d"
            + smallest_input_note(
                student,
                embedding_parameters,
                SMALL_SIZES,
                lambda a, b: (
                    not isinstance(a, bool) and isinstance(a, numbers.Real) and a == b
                ),
                lambda vocab_size, d: f"vocab_size={vocab_size}, d={d}",
            ),
            "sum(p.numel() for p in nn.Embedding(vocab_size, d).parameters())",
        )
