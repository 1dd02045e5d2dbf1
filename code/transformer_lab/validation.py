"""Argument checks shared by the package: one small ``require_*`` helper per kind of argument.

Every public function checks its inputs here, at the package boundary, so bad input fails with
one sentence that names the argument, what was expected and what came — never with a deep
PyTorch traceback, and never with a silently wrong answer. Type errors (a ``str`` where a number
belongs) raise ``TypeError``; wrong values of the right type (a negative size, a NaN) raise
``ValueError``. Helpers that check a value return it, so a check can sit in an assignment.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence

import torch


def describe(shape: Sequence[int | str]) -> str:
    """Format a shape as ``(B, L, D)`` or ``(2, 3, 4)``."""
    return "(" + ", ".join(str(size) for size in shape) + ")"


def _kind(value: object) -> str:
    """``float 2.5``, ``str 'abc'``: the type and the value, for messages."""
    return f"{type(value).__name__} {value!r}"


# --- plain Python arguments -------------------------------------------------------------------


def is_int(value: object) -> bool:
    """True for a whole number: ``int`` or a NumPy integer, but not a bool (``True`` is not 1 here)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def require_int(name: str, value: object, minimum: int | None = None) -> int:
    """Return ``value`` as an ``int`` if it is a whole number (not a bool) of at least ``minimum``.

    NumPy integers are accepted; floats such as ``2.0``, strings and ``True`` are not.
    """
    if not is_int(value):
        raise TypeError(f"{name} must be an int, got {_kind(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int of at least {minimum}, got {value}")
    return int(value)


def require_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is ``True`` or ``False``; the string ``"False"`` or ``1`` are refused."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {_kind(value)}")
    return value


def require_number(
    name: str,
    value: object,
    above: float | None = None,
    below: float | None = None,
    minimum: float | None = None,
) -> float:
    """Return ``value`` as a ``float`` if it is a finite real number within the bounds.

    ``above``/``below`` are exclusive bounds, ``minimum`` an inclusive one (``None``: no bound).
    Bools, strings, ``None``, NaN and infinities are refused.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {_kind(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if above is not None and not number > above or below is not None and not number < below:
        if above is not None and below is not None:
            bounds = f"strictly between {above:g} and {below:g}"
        elif above is not None:
            bounds = "positive" if above == 0 else f"above {above:g}"
        else:
            bounds = f"below {below:g}"
        raise ValueError(f"{name} must be {bounds}, got {value}")
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be at least {minimum:g}, got {value}")
    return number


def require_texts(name: str, value: object, allow_empty: bool = False) -> list[str]:
    """Return ``value`` as a list if it is a collection of ``str`` (list, tuple, pandas Series).

    A single string is refused: ``"hello"`` would otherwise be read as five one-letter texts.
    An empty collection is refused unless ``allow_empty``.
    """
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(
            f"{name} must be a list of strings (one text per item), not a {type(value).__name__}"
        )
    texts = list(value)
    if not texts and not allow_empty:
        raise ValueError(f"{name} is empty: expected at least one text")
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{position}] must be a str, got {_kind(text)}")
    return texts


def require_counts(name: str, value: object) -> Mapping[str, int]:
    """Return ``value`` if it maps each word (``str``) to a whole-number count of at least 0."""
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{name} must map each word to its count (see word_frequencies), got {type(value).__name__}"
        )
    for word, count in value.items():
        if not isinstance(word, str):
            raise TypeError(f"{name} must have str keys (words), got {_kind(word)}")
        require_int(f"{name}[{word!r}]", count, minimum=0)
    return value


# --- tensors ----------------------------------------------------------------------------------


def require_tensor(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is a tensor, else raise ``TypeError`` naming the argument."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def require_float_tensor(
    name: str, value: object, dtype: torch.dtype | None = None, why: str = ""
) -> torch.Tensor:
    """Return ``value`` if it is a floating-point tensor (of ``dtype``, if given).

    Integer or mismatched inputs would otherwise fail deep inside PyTorch with "expected scalar
    type Float"; ``why`` says where the required dtype comes from (e.g. "the model's weights").
    """
    tensor = require_tensor(name, value)
    reason = f" ({why})" if why else ""
    if not tensor.is_floating_point():
        because = reason if dtype is None else ""
        raise TypeError(
            f"{name} must hold floating-point numbers{because}, got dtype {tensor.dtype}; convert it with .float()"
        )
    if dtype is not None and tensor.dtype != dtype:
        raise TypeError(
            f"{name} must have dtype {dtype}{reason}, got {tensor.dtype}; convert it with .to({dtype})"
        )
    return tensor


def require_rank(name: str, tensor: torch.Tensor, expected: Sequence[str]) -> None:
    """Raise ``ValueError`` unless ``tensor`` has ``len(expected)`` dimensions.

    ``expected`` names the dimensions, e.g. ``("B", "Lq", "D")``, so the message can say what
    each axis should have been.
    """
    if tensor.dim() != len(expected):
        raise ValueError(
            f"{name} should have shape {describe(expected)} ({len(expected)} dimensions), "
            f"got {describe(tensor.shape)} ({tensor.dim()} dimensions)"
        )


def require_size(
    name: str, tensor: torch.Tensor, axis: int, size: int, meaning: str
) -> None:
    """Raise ``ValueError`` unless ``tensor.shape[axis] == size``; ``meaning`` explains why."""
    if tensor.shape[axis] != size:
        raise ValueError(
            f"{name} has shape {describe(tensor.shape)} but its dimension {axis} should be "
            f"{size} ({meaning})"
        )


def require_nonzero_size(name: str, tensor: torch.Tensor, axis: int, meaning: str) -> None:
    """Raise ``ValueError`` if ``tensor`` has no entries along ``axis``; ``meaning`` names the axis."""
    if tensor.shape[axis] == 0:
        raise ValueError(
            f"{name} has shape {describe(tensor.shape)}: it has no {meaning} (dimension {axis} is 0)"
        )


def require_padding(
    padding: torch.Tensor, batch: int, length: int, name: str = "padding"
) -> None:
    """Check a key-padding mask: boolean, shape ``(batch, length)``, True meaning 'ignore'."""
    require_tensor(name, padding)
    if padding.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean tensor (True = ignore this position), got dtype {padding.dtype}"
        )
    if tuple(padding.shape) != (batch, length):
        raise ValueError(
            f"{name} should have shape {describe((batch, length))} (batch, positions), "
            f"got {describe(padding.shape)}"
        )


def require_mask(
    name: str, value: object, shape: Sequence[int], meaning: str
) -> torch.Tensor:
    """Return ``value`` if it is a boolean mask (True = ignore) that broadcasts to ``shape``."""
    mask = require_tensor(name, value)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean tensor (True = ignore), got dtype {mask.dtype}"
        )
    # The broadcasting rule written out: torch.broadcast_shapes imports sympy on its first call,
    # half a second of every process that runs a masked attention.
    fits = mask.dim() <= len(shape) and all(
        size in (1, wanted) for size, wanted in zip(reversed(mask.shape), reversed(shape))
    )
    if not fits:
        raise ValueError(
            f"{name} has shape {describe(mask.shape)}, which does not broadcast to {meaning} {describe(shape)}"
        )
    return mask


def require_some_key(ignore: torch.Tensor) -> None:
    """Raise ``ValueError`` if a query may read no key at all.

    ``ignore`` (B, Lq, Lk), True = ignore, or a padding mask (B, Lk) that applies to every query.
    Softmax over nothing but -inf divides 0 by 0 and returns NaN, so this is always a caller's bug.
    """
    if ignore.dim() == 2:
        empty = ignore.all(dim=-1)
        if empty.any():
            batch = int(empty.nonzero()[0, 0])
            raise ValueError(
                f"example {batch} is all padding: every key is masked, so softmax would divide 0 by 0 "
                "and return NaN; give every example at least one real token"
            )
        return
    empty = ignore.all(dim=-1)
    if empty.any():
        batch, query = (int(i) for i in empty.nonzero()[0].tolist())
        raise ValueError(
            f"example {batch}, query {query}: every key is masked, so softmax would divide "
            "0 by 0 and return NaN; give every query at least one key it may read"
        )


def _first_position(mask: torch.Tensor) -> str:
    return describe(mask.nonzero()[0].tolist())


def require_finite(
    name: str,
    tensor: torch.Tensor,
    skip: torch.Tensor | None = None,
    allow_inf: bool = False,
) -> torch.Tensor:
    """Return ``tensor`` if it holds no NaN (and no ±inf unless ``allow_inf``) outside ``skip``.

    ``skip`` is a boolean mask broadcastable to ``tensor``, True = not checked (padding, whose
    contents the package never reads). The message gives the first bad position.
    """
    bad = torch.isnan(tensor) if allow_inf else ~torch.isfinite(tensor)
    if skip is not None:
        bad = bad & ~skip
    if bad.any():
        what = "NaN" if allow_inf else "NaN or infinite values"
        raise ValueError(f"{name} holds {what}, first at position {_first_position(bad)}")
    return tensor


def require_binary_labels(name: str, labels: object) -> torch.Tensor:
    """Return ``labels`` if it is a tensor holding only 0 and 1 (any dtype, bool included).

    Labels such as {0, 2}, {-1, 1} or probabilities would otherwise be compared with 0/1
    predictions and give a wrong accuracy or loss without a word.
    """
    tensor = require_tensor(name, labels)
    bad = ~((tensor == 0) | (tensor == 1))
    if bad.any():
        found = sorted({float(x) for x in tensor[bad].flatten()[:1000].tolist()}, key=str)[
            :5
        ]
        raise ValueError(
            f"{name} must hold only the classes 0 and 1, got {found} (first at position {_first_position(bad)})"
        )
    return tensor


def require_logits_and_labels(logits: object, labels: object) -> None:
    """Raise unless ``logits`` (N,) float and ``labels`` (N,) in {0, 1} can be scored together.

    Refused: empty input (the accuracy of nothing is undefined), a NaN logit (it is neither above
    nor below 0), labels other than 0 and 1, and shapes other than two equal (N,). ±inf logits are
    valid: they are confidently one class.
    """
    require_float_tensor("logits", logits)
    require_binary_labels("labels", labels)
    if logits.shape != labels.shape or logits.dim() != 1:
        raise ValueError(
            f"logits and labels should both have shape (N,), got {describe(logits.shape)} "
            f"and {describe(labels.shape)}"
        )
    if len(logits) == 0:
        raise ValueError(
            "logits and labels are empty: the accuracy of no examples is undefined"
        )
    require_finite("logits", logits, allow_inf=True)
