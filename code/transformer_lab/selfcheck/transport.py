"""What a worker sends back, in a form the parent can read without running any of its code.

Unpickling runs whatever a pickle names, so a student's function could return an object whose
pickle calls ``exec`` in the parent. The worker therefore encodes results as plain data: every
value becomes a tagged tuple of strings, numbers, bytes, lists and tuples; tensors and arrays
travel as raw bytes with a dtype from a short list; a tokenizer stays in the worker, which
sends a handle the parent calls it through (``worker.RemoteObject``). The parent
unpickles that with :class:`PlainUnpickler`, which refuses every global, and rebuilds the values.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable

import numpy as np
import torch

from transformer_lab.selfcheck.execution import GradientReport, Opaque, type_name

DEPTH = 4
TENSOR_DTYPES = {
    str(d): d
    for d in (
        torch.bool,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.float32,
        torch.float64,
    )
}
NUMPY_KINDS = "biuf"  # bool, signed and unsigned integers, floats


class ModuleState:
    """A ``nn.Module`` that came back from a worker: its type and its tensors."""

    def __init__(self, kind: str, state: dict[str, torch.Tensor]):
        self.kind, self._state = kind, state

    def state_dict(self) -> dict[str, torch.Tensor]:
        return dict(self._state)


def encode(
    value: object, depth: int = 0, keep: Callable[[object], int | None] | None = None
) -> object:
    """``value`` as plain data (see the module docstring). In a worker, ``keep`` may hold on to
    an object that is not plain data (a tokenizer) and return a handle: the parent then gets a
    ``("remote", handle, module, class name)`` node and calls it through the worker."""
    if (
        value is None
        or isinstance(value, (bool, int, float, str))
        and type(value) in (bool, int, float, str)
    ):
        return ("plain", value)
    if (
        isinstance(value, torch.Tensor)
        and str(value.dtype) in TENSOR_DTYPES
        and value.layout == torch.strided
    ):
        data = value.detach().cpu().contiguous()
        return (
            "tensor",
            str(data.dtype),
            list(data.shape),
            data.view(-1).view(torch.uint8).numpy().tobytes()
            if data.dtype != torch.bool
            else data.numpy().tobytes(),
        )
    if isinstance(value, np.ndarray) and value.dtype.kind in NUMPY_KINDS:
        return (
            "ndarray",
            value.dtype.str,
            list(value.shape),
            np.ascontiguousarray(value).tobytes(),
        )
    if isinstance(value, np.generic) and value.dtype.kind in NUMPY_KINDS:
        return ("npscalar", value.dtype.str, value.tobytes())
    if depth < DEPTH and type(value) in (list, tuple):
        return (type(value).__name__, [encode(item, depth + 1, keep) for item in value])
    if depth < DEPTH and type(value) is dict:
        return (
            "dict",
            [
                (encode(k, depth + 1, keep), encode(v, depth + 1, keep))
                for k, v in value.items()
            ],
        )
    if isinstance(value, torch.nn.Module):
        return (
            "module",
            type_name(value),
            [(name, encode(t, depth + 1, keep)) for name, t in value.state_dict().items()],
        )
    if isinstance(value, GradientReport):
        return (
            "gradient",
            value.requires_grad,
            dict(value.reached),
            encode(dict(value.gradients), depth + 1),
        )
    handle = keep(value) if keep is not None else None
    if handle is not None:
        kind = type(value)
        return ("remote", handle, str(kind.__module__), str(kind.__name__))
    try:
        from tokenizers import models, trainers
    except ImportError:  # pragma: no cover
        models = trainers = None
    category = ""
    if trainers is not None and isinstance(value, trainers.Trainer):
        category = "trainer"
    elif models is not None and isinstance(value, models.Model):
        category = "model"
    try:
        text = repr(value)[:120]
    except Exception:  # noqa: BLE001 - a broken __repr__ is the student's, not ours
        text = f"<{type(value).__name__}>"
    return ("opaque", type_name(value), text, category)


# What one reply may rebuild in the parent. A pickle can name one object many times, so a
# reply of a few megabytes (forged by code that replaced ``encode`` in the worker) could
# otherwise unpack into gigabytes: a list naming one 50 MB tensor 2,000 times, a list nested
# 100,000 deep. Honest replies are far smaller (a check's answers are small tensors).
DECODE_BYTES = 64 * 2**20
DECODE_NODES = 1_000_000
DECODE_DEPTH = 4 * DEPTH


class TooLarge(ValueError):
    """A reply that would rebuild into more than the parent accepts."""


class _Budget:
    def __init__(self):
        self.bytes, self.nodes = DECODE_BYTES, DECODE_NODES

    def spend(self, nodes: int = 1, data: int = 0) -> None:
        self.nodes -= nodes
        self.bytes -= data
        if self.nodes < 0 or self.bytes < 0:
            raise TooLarge(
                f"the result is too large to check (over {DECODE_NODES:,} values or "
                f"{DECODE_BYTES // 2**20} MB)"
            )


def decode(
    node: object,
    remote: Callable[[int, str, str], object] | None = None,
    budget: _Budget | None = None,
    depth: int = 0,
) -> object:
    """Rebuild a value from :func:`encode`'s plain data; ``remote`` makes the stand-in of an
    object that stayed in the worker (without it, such an object is refused). ``TooLarge``
    when it would rebuild into more than :data:`DECODE_BYTES`, :data:`DECODE_NODES` values or
    :data:`DECODE_DEPTH` levels."""
    budget = budget or _Budget()
    budget.spend()
    if depth > DECODE_DEPTH:
        raise TooLarge(f"the result is nested more than {DECODE_DEPTH} levels deep")
    if not isinstance(node, tuple) or not node:
        raise ValueError("not a node")
    tag = node[0]
    for field in node[1:]:
        if isinstance(field, (bytes, str)):
            budget.spend(data=len(field))
    if tag in ("list", "tuple", "dict", "module"):
        items = node[2] if tag == "module" else node[1]
        budget.spend(nodes=len(items))

    def inner(item):
        return decode(item, remote, budget, depth + 1)

    if tag == "plain":
        return node[1]
    if tag == "tensor":
        dtype = TENSOR_DTYPES[node[1]]
        flat = (
            torch.frombuffer(bytearray(node[3]), dtype=torch.uint8)
            if node[3]
            else torch.empty(0, dtype=torch.uint8)
        )
        if dtype == torch.bool:
            return flat.to(torch.bool).reshape(node[2])
        return flat.view(dtype).reshape(node[2]).clone()
    if tag == "ndarray":
        dtype = np.dtype(node[1])
        if dtype.kind not in NUMPY_KINDS:
            raise ValueError(f"unexpected array dtype {dtype}")
        return np.frombuffer(node[3], dtype=dtype).reshape(node[2]).copy()
    if tag == "npscalar":
        dtype = np.dtype(node[1])
        if dtype.kind not in NUMPY_KINDS:
            raise ValueError(f"unexpected scalar dtype {dtype}")
        return np.frombuffer(node[2], dtype=dtype)[0]
    if tag == "list":
        return [inner(item) for item in node[1]]
    if tag == "tuple":
        return tuple(inner(item) for item in node[1])
    if tag == "dict":
        return {inner(k): inner(v) for k, v in node[1]}
    if tag == "module":
        return ModuleState(node[1], {str(name): inner(t) for name, t in node[2]})
    if tag == "gradient":
        budget.spend(nodes=len(node[2]))
        gradients = inner(node[3])
        if not isinstance(gradients, dict):
            raise ValueError("the gradients are not a mapping")
        return GradientReport(
            bool(node[1]),
            {str(k): str(v) for k, v in node[2].items()},
            {str(k): v for k, v in gradients.items() if isinstance(v, torch.Tensor)},
        )
    if tag == "remote" and remote is not None:
        return remote(int(node[1]), str(node[2]), str(node[3]))
    if tag == "opaque":
        return Opaque(str(node[1]), str(node[2]), str(node[3]))
    raise ValueError(f"unexpected tag {tag!r}")


class PlainUnpickler(pickle.Unpickler):
    """Reads only plain data: any class or function named in the pickle is refused."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refused to load {module}.{name}")


def loads_plain(data: bytes) -> object:
    return PlainUnpickler(io.BytesIO(data)).load()
