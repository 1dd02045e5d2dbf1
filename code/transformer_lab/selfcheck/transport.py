"""What a worker sends back, in a form the parent reads in linear time without running its code.

The worker's code is the student's to change, so a reply is treated as hostile bytes. Nothing
from a worker is unpickled (unpickling runs what a pickle names, and rebuilds one object named
many times as many objects). The worker encodes a result as plain data: every value becomes a
tagged list of strings, numbers, lists and raw bytes; tensors and arrays travel as raw bytes
with a dtype from a short list and a shape; a tokenizer stays in the worker, which sends a
handle the parent calls it through (``worker.RemoteObject``).

On the wire (:func:`pack`, :func:`unpack`) a reply is a short binary header, a JSON document
of at most :data:`JSON_BYTES` and the raw byte strings it refers to. The parent checks the
sizes before it parses anything, parses the JSON with Python's linear-time parser, and
:func:`decode` rebuilds the values under a budget of values, bytes, depth and time, refusing a
dict whose keys hash alike (a dict of such keys costs time quadratic in their number).
"""

from __future__ import annotations

import json
import struct
import time
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
        text = bounded_repr(value, 120)
    except Exception:  # noqa: BLE001 - a broken __repr__ is the student's, not ours
        text = f"<{type(value).__name__}>"
    return ("opaque", type_name(value), text, category)


# What one reply may rebuild in the parent. Honest replies are far smaller (a check's answers
# are small tensors, a tokenizer's vocabulary a few thousand entries).
DECODE_BYTES = 64 * 2**20
DECODE_NODES = 1_000_000
DECODE_DEPTH = 4 * DEPTH
JSON_BYTES = 4 * 2**20  # the JSON part of one reply; tensors travel beside it as raw bytes
MAX_BLOBS = 100_000
TEXT_CHARACTERS = 200  # an opaque object's description, a remote class's name
MAGIC = b"TLR1"
_HEAD = struct.Struct("<4sQQ")  # magic, JSON bytes, number of raw byte strings
_BLOB = "\x00blob"  # the JSON object {_BLOB: i} stands for the i-th raw byte string


class TooLarge(ValueError):
    """A reply that would rebuild into more than the parent accepts."""


class Malformed(ValueError):
    """A reply that is not what :func:`pack` makes."""


def bounded_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, built from pieces that are cut first: a
    long string, list, tuple or dict costs ``limit``, not its own size."""
    return _bounded(value, limit, 0)[:limit]


def _bounded(value: object, limit: int, depth: int) -> str:
    if type(value) is str:
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    if type(value) in (bytes, bytearray):
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    if depth < DEPTH and type(value) in (list, tuple, dict):
        items = list(value.items()) if type(value) is dict else list(value)
        parts, size = [], 0
        for item in items[:limit]:
            part = (
                f"{_bounded(item[0], limit, depth + 1)}: "
                f"{_bounded(item[1], limit, depth + 1)}"
                if type(value) is dict
                else _bounded(item, limit, depth + 1)
            )
            parts.append(part)
            size += len(part) + 2
            if size > limit:
                break
        more = ", ..." if len(parts) < len(items) else ""
        opening, closing = {list: "[]", tuple: "()", dict: "{}"}[type(value)]
        return opening + ", ".join(parts) + more + closing
    if type(value) in (list, tuple, dict):
        return f"<{type(value).__name__} of {len(value)}>"
    return repr(value)[: limit * 4]  # tensors and arrays summarise themselves


def _plain(value: object, blobs: list[bytes], depth: int = 0) -> object:
    if depth > DECODE_DEPTH + 4:  # the reply's own levels, then the value's
        raise TooLarge(f"the result is nested more than {DECODE_DEPTH} levels deep")
    if isinstance(value, (bytes, bytearray, memoryview)):
        blobs.append(bytes(value))
        # Stop at once: the parent refuses it anyway.
        if sum(map(len, blobs)) > DECODE_BYTES:
            raise TooLarge(
                f"the result is too large to check (over {DECODE_BYTES // 2**20} MB)"
            )
        return {_BLOB: len(blobs) - 1}
    if isinstance(value, (list, tuple)):
        return [_plain(item, blobs, depth + 1) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, blobs, depth + 1) for k, v in value.items()}
    return value


def pack(message: object) -> bytes:
    """The worker's side: ``message`` (plain data, see :func:`encode`) as bytes for the wire;
    ``TooLarge`` for a message the parent would refuse (too deep, too many bytes)."""
    blobs: list[bytes] = []
    document = json.dumps(_plain(message, blobs), ensure_ascii=True).encode("ascii")
    sizes = struct.pack(f"<{len(blobs)}Q", *(len(b) for b in blobs))
    return b"".join([_HEAD.pack(MAGIC, len(document), len(blobs)), sizes, document, *blobs])


def unpack(data: bytes) -> object:
    """The parent's side: the message :func:`pack` made (lists for its tuples, ``bytes`` for
    its raw strings); ``TooLarge`` or ``Malformed`` before any parsing when the sizes are not
    those of an honest reply."""
    if len(data) < _HEAD.size:
        raise Malformed("the reply is too short")
    magic, length, count = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise Malformed("the reply is not in the self-check's format")
    if length > JSON_BYTES or count > MAX_BLOBS:
        raise TooLarge(
            f"the result is too large to check (over {JSON_BYTES // 2**20} MB of values "
            f"besides tensors, or over {MAX_BLOBS:,} tensors)"
        )
    offset = _HEAD.size + 8 * count
    if len(data) < offset + length:
        raise Malformed("the reply is shorter than it says")
    sizes = struct.unpack_from(f"<{count}Q", data, _HEAD.size)
    if offset + length + sum(sizes) != len(data):
        raise Malformed("the reply's parts do not add up to its size")
    view, blobs, start = memoryview(data), [], offset + length
    for size in sizes:
        blobs.append(view[start : start + size])
        start += size

    def pairs(items: list[tuple[str, object]]) -> object:
        if len(items) == 1 and items[0][0] == _BLOB:
            index = items[0][1]
            if type(index) is not int or not 0 <= index < count:
                raise Malformed("the reply names raw bytes it does not hold")
            return bytes(blobs[index])
        return dict(items)  # JSON keys are strings: their hashes are random per process

    try:
        return json.loads(
            bytes(view[offset : offset + length]).decode("ascii"), object_pairs_hook=pairs
        )
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise Malformed(f"the reply is not valid JSON ({type(error).__name__})") from None


class _Budget:
    def __init__(self, deadline: float | None = None):
        self.bytes, self.nodes = DECODE_BYTES, DECODE_NODES
        self.deadline = deadline

    def spend(self, nodes: int = 1, data: int = 0) -> None:
        self.nodes -= nodes
        self.bytes -= data
        if self.nodes < 0 or self.bytes < 0:
            raise TooLarge(
                f"the result is too large to check (over {DECODE_NODES:,} values or "
                f"{DECODE_BYTES // 2**20} MB)"
            )
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TooLarge(
                "the result took longer to read back than the check's time limit"
            )


def budget(deadline: float | None = None) -> _Budget:
    """What one reply may rebuild; ``deadline`` (``time.monotonic()``) ends a slow rebuild."""
    return _Budget(deadline)


# numpy dtypes an array may travel as (both byte orders): booleans, integers, floats.
NUMPY_DTYPES = {
    np.dtype(code).newbyteorder(order).str for code in "?bBhHiIlLqQefd" for order in "<>"
}


def _shape(field: object) -> list[int]:
    if type(field) is not list or len(field) > 32:
        raise Malformed("a tensor's shape is not a short list of sizes")
    if not all(type(n) is int and 0 <= n for n in field):
        raise Malformed("a tensor's shape is not a list of sizes")
    return field


def _field(node: list, index: int, kind: type) -> object:
    if len(node) <= index or type(node[index]) is not kind:
        raise Malformed(f"a {node[0]} node lacks its {kind.__name__} field")
    return node[index]


def _distinct_hashes(keys: list) -> None:
    """Refuse keys that are not plain values, or two keys that hash alike (an honest dict's
    keys are distinct strings, numbers or tuples of them, whose hashes differ)."""
    hashes = set()
    for key in keys:
        if type(key) is str:
            continue  # a string's hash is random per process: no one can make them collide
        if not isinstance(key, (int, float, tuple, type(None))):
            raise Malformed(f"a dict key of type {type(key).__name__}")
        try:
            hashes.add(hash(key))
        except TypeError:
            raise Malformed("a dict key that cannot be hashed") from None
    if len(hashes) < sum(type(k) is not str for k in keys):
        raise TooLarge("the result is a dict whose keys hash alike (refused unread)")


def decode(
    node: object,
    remote: Callable[[int, str, str], object] | None = None,
    budget: _Budget | None = None,
    depth: int = 0,
) -> object:
    """Rebuild a value from :func:`encode`'s plain data (after :func:`unpack`: lists for
    tuples); ``remote`` makes the stand-in of an object that stayed in the worker (without it,
    such an object is refused). ``TooLarge`` when it would rebuild into more than
    :data:`DECODE_BYTES`, :data:`DECODE_NODES` values or :data:`DECODE_DEPTH` levels, or take
    longer than the budget's deadline; ``Malformed`` when it is not what :func:`encode` makes.
    Every node costs time linear in its size."""
    budget = budget or _Budget()
    budget.spend()
    if depth > DECODE_DEPTH:
        raise TooLarge(f"the result is nested more than {DECODE_DEPTH} levels deep")
    if not isinstance(node, (tuple, list)) or not node or type(node[0]) is not str:
        raise Malformed("not a node")
    tag = node[0]
    for field in node[1:]:
        if isinstance(field, (bytes, str)):
            budget.spend(data=len(field))
    if tag in ("list", "tuple", "dict", "module"):
        items = _field(node, 2 if tag == "module" else 1, list)
        budget.spend(nodes=len(items))

    def inner(item):
        return decode(item, remote, budget, depth + 1)

    def pair(item) -> tuple:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise Malformed("a dict entry is not a pair")
        return inner(item[0]), inner(item[1])

    if tag == "plain":
        if len(node) != 2 or not (
            node[1] is None or type(node[1]) in (bool, int, float, str)
        ):
            raise Malformed("a plain node holds something else")
        return node[1]
    if tag == "tensor":
        if _field(node, 1, str) not in TENSOR_DTYPES:
            raise Malformed(f"unexpected tensor dtype {node[1][:40]!r}")
        dtype, shape, data = TENSOR_DTYPES[node[1]], _shape(node[2]), _field(node, 3, bytes)
        flat = (
            torch.frombuffer(bytearray(data), dtype=torch.uint8)
            if data
            else torch.empty(0, dtype=torch.uint8)
        )
        if dtype == torch.bool:
            return flat.to(torch.bool).reshape(shape)
        return flat.view(dtype).reshape(shape).clone()
    if tag == "ndarray":
        if _field(node, 1, str) not in NUMPY_DTYPES:
            raise Malformed(f"unexpected array dtype {node[1][:40]!r}")
        data = _field(node, 3, bytes)
        return np.frombuffer(data, dtype=np.dtype(node[1])).reshape(_shape(node[2])).copy()
    if tag == "npscalar":
        if _field(node, 1, str) not in NUMPY_DTYPES:
            raise Malformed(f"unexpected scalar dtype {node[1][:40]!r}")
        return np.frombuffer(_field(node, 2, bytes), dtype=np.dtype(node[1]))[0]
    if tag == "list":
        return [inner(item) for item in node[1]]
    if tag == "tuple":
        return tuple(inner(item) for item in node[1])
    if tag == "dict":
        pairs = [pair(item) for item in node[1]]
        _distinct_hashes([key for key, _ in pairs])
        return dict(pairs)
    if tag == "module":
        state = {}
        for item in node[2]:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise Malformed("a module's entry is not a pair")
            state[str(item[0])[:TEXT_CHARACTERS]] = inner(item[1])
        return ModuleState(str(_field(node, 1, str))[:TEXT_CHARACTERS], state)
    if tag == "gradient":
        reached = _field(node, 2, dict)
        budget.spend(nodes=len(reached))
        gradients = inner(node[3]) if len(node) > 3 else None
        if not isinstance(gradients, dict):
            raise Malformed("the gradients are not a mapping")
        return GradientReport(
            bool(node[1]),
            {
                str(k)[:TEXT_CHARACTERS]: str(v)[:TEXT_CHARACTERS]
                for k, v in reached.items()
            },
            {str(k): v for k, v in gradients.items() if isinstance(v, torch.Tensor)},
        )
    if tag == "remote" and remote is not None:
        if type(_field(node, 1, int)) is not int:
            raise Malformed("a handle is not a number")
        return remote(
            node[1],
            str(_field(node, 2, str))[:TEXT_CHARACTERS],
            str(_field(node, 3, str))[:TEXT_CHARACTERS],
        )
    if tag == "opaque":
        return Opaque(*(str(_field(node, i, str))[:TEXT_CHARACTERS] for i in (1, 2, 3)))
    raise Malformed(f"unexpected tag {tag[:40]!r}")
