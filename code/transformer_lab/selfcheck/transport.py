"""What a worker sends back, in a form the parent reads in linear time without running its code.

The worker's code is the student's to change, so a reply is hostile bytes. The parent (root on
Gradescope) never unpickles one: unpickling runs what a pickle names, its memo makes one object
named many times into a graph whose walk is exponential, and it builds dicts (whose keys may all
hash alike: quadratic time) before any check could refuse them. ``torch.load(weights_only=True)``
shares those two faults. Instead a reply is a short header, a JSON document of at most
:data:`JSON_BYTES` (no references: its tree is as large as its text) and raw byte strings, each
of which the JSON may name once. :func:`decode` rebuilds the values in one walk under a budget
of values, bytes, depth and time, and refuses non-string dict keys that hash alike. A tokenizer
stays in the worker, which sends a handle the parent calls it through (``parent.RemoteObject``).
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Callable

import numpy as np
import torch

from transformer_lab.selfcheck.execution import GradientReport, Opaque, type_name

DEPTH = 4  # levels of lists, tuples and dicts a result may have
DECODE_BYTES = 64 * 2**20  # what one reply may rebuild (honest ones are far smaller)
DECODE_NODES = 1_000_000
JSON_BYTES = 4 * 2**20  # the JSON part of one reply; arrays travel beside it as raw bytes
MAX_BLOBS = 100_000
TEXT = 200  # characters of an opaque object's description, a remote class's name
MAGIC = b"TLR1"
_HEAD = struct.Struct("<4sQQ")  # magic, JSON bytes, number of raw byte strings
_BLOB = "\x00blob"  # the JSON object {_BLOB: i} stands for the i-th raw byte string
# numpy dtypes an array or tensor may travel as: booleans, integers, floats, either byte order.
DTYPES = {np.dtype(c).newbyteorder(o).str for c in "?bBhHiIlLqQefd" for o in "<>"}
TENSOR_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
TENSOR_DTYPES += (torch.float16, torch.float32, torch.float64)


class TooLarge(ValueError):
    """A reply that would rebuild into more than the parent accepts."""


class Malformed(ValueError):
    """A reply that is not what :func:`pack` makes."""


class ModuleState:
    """A ``nn.Module`` that came back from a worker: its type and its tensors."""

    def __init__(self, kind: str, state: dict[str, torch.Tensor]):
        self.kind, self._state = kind, state

    def state_dict(self) -> dict[str, torch.Tensor]:
        return dict(self._state)


def encode(
    value: object, depth: int = 0, keep: Callable[[object], int | None] | None = None
) -> object:
    """``value`` as nodes of plain data: ``("plain", x)``, ``("array", kind, dtype, shape,
    bytes)`` for a tensor, array or numpy scalar, lists, tuples, dicts, a module's state, a
    gradient report, else an opaque description. In a worker, ``keep`` may hold on to an object
    (a tokenizer) and return a handle: the parent gets a ``("remote", ...)`` node."""
    if value is None or type(value) in (bool, int, float, str):
        return ("plain", value)
    tensor = isinstance(value, torch.Tensor) and value.layout == torch.strided
    if tensor and value.dtype in TENSOR_DTYPES:
        array = value.detach().cpu().contiguous().numpy()
        return ("array", "tensor", array.dtype.str, list(array.shape), array.tobytes())
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.str in DTYPES:
        kind = "ndarray" if isinstance(value, np.ndarray) else "scalar"
        array = np.asarray(value)  # tobytes() writes C order
        return ("array", kind, array.dtype.str, list(array.shape), array.tobytes())
    if depth < DEPTH and type(value) in (list, tuple):
        return (type(value).__name__, [encode(item, depth + 1, keep) for item in value])
    if depth < DEPTH and type(value) is dict:
        items = value.items()
        return (
            "dict",
            [(encode(k, depth + 1, keep), encode(v, depth + 1, keep)) for k, v in items],
        )
    return _encode_object(value, keep)


def _encode_object(value: object, keep: Callable[[object], int | None] | None) -> object:
    """A module's state, a gradient report, a handle from ``keep``, else a description."""
    if isinstance(value, torch.nn.Module):
        return ("module", type_name(value), encode(dict(value.state_dict())))
    if isinstance(value, GradientReport):
        fields = (value.requires_grad, dict(value.reached), dict(value.gradients))
        return ("gradient", encode(fields))
    handle = keep(value) if keep is not None else None
    if handle is not None:
        return ("remote", handle, str(type(value).__module__), str(type(value).__name__))
    from tokenizers import models, trainers

    category = {trainers.Trainer: "trainer", models.Model: "model"}
    category = next((c for k, c in category.items() if isinstance(value, k)), "")
    try:
        text = bounded_repr(value, 120)
    except Exception:  # noqa: BLE001 - a broken __repr__ is the student's, not ours
        text = f"<{type(value).__name__}>"
    return ("opaque", type_name(value), text, category)


def bounded_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, built from pieces that are cut first: a
    long string, list, tuple or dict costs ``limit``, not its own size."""
    return _bounded(value, limit, 0)[:limit]


def _bounded(value: object, limit: int, depth: int) -> str:
    if type(value) in (str, bytes, bytearray):
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    if type(value) not in (list, tuple, dict):
        return repr(value)[: limit * 4]  # tensors and arrays summarise themselves
    if depth >= DEPTH:
        return f"<{type(value).__name__} of {len(value)}>"
    items = list(value.items()) if type(value) is dict else list(value)
    parts, size = [], 0
    for item in items[:limit]:
        if type(value) is dict:
            part = f"{_bounded(item[0], limit, depth + 1)}: {_bounded(item[1], limit, depth + 1)}"
        else:
            part = _bounded(item, limit, depth + 1)
        parts.append(part)
        size += len(part) + 2
        if size > limit:
            break
    more = ", ..." if len(parts) < len(items) else ""
    opening, closing = {list: "[]", tuple: "()", dict: "{}"}[type(value)]
    return opening + ", ".join(parts) + more + closing


def pack(message: object) -> bytes:
    """The worker's side: ``message`` (nodes of :func:`encode`) as bytes for the wire;
    ``TooLarge`` for a message the parent would refuse."""
    blobs: list[bytes] = []

    def plain(value: object, depth: int) -> object:
        if depth > 4 * DEPTH + 4:  # the reply's own levels, then the value's
            raise TooLarge(f"the result is nested more than {4 * DEPTH} levels deep")
        if isinstance(value, (bytes, bytearray, memoryview)):
            blobs.append(bytes(value))
            if sum(map(len, blobs)) > DECODE_BYTES:  # stop at once: the parent refuses it
                raise TooLarge(
                    f"the result is too large to check (over {DECODE_BYTES >> 20} MB)"
                )
            return {_BLOB: len(blobs) - 1}
        if isinstance(value, (list, tuple)):
            return [plain(item, depth + 1) for item in value]
        if isinstance(value, dict):
            return {str(k): plain(v, depth + 1) for k, v in value.items()}
        return value

    document = json.dumps(plain(message, 0), ensure_ascii=True).encode("ascii")
    sizes = struct.pack(f"<{len(blobs)}Q", *(len(b) for b in blobs))
    return b"".join([_HEAD.pack(MAGIC, len(document), len(blobs)), sizes, document, *blobs])


def unpack(data: bytes) -> object:
    """The parent's side: the message :func:`pack` made (lists for its tuples, ``bytes`` for
    its raw strings); ``TooLarge`` or ``Malformed`` before any parsing when the sizes are not
    those of an honest reply. Each raw string may be named once (else one 60 MB string named a
    million times would be copied a million times)."""
    if len(data) < _HEAD.size or data[:4] != MAGIC:
        raise Malformed("the reply is not in the self-check's format")
    _, length, count = _HEAD.unpack_from(data)
    if length > JSON_BYTES or count > MAX_BLOBS:
        raise TooLarge(
            f"the result is too large to check (over {JSON_BYTES >> 20} MB of values "
            f"besides tensors, or over {MAX_BLOBS:,} tensors)"
        )
    offset = _HEAD.size + 8 * count
    if len(data) < offset + length:
        raise Malformed("the reply is shorter than it says")
    sizes = struct.unpack_from(f"<{count}Q", data, _HEAD.size)
    if offset + length + sum(sizes) != len(data):
        raise Malformed("the reply's parts do not add up to its size")
    view, starts = memoryview(data), [offset + length]
    for size in sizes:
        starts.append(starts[-1] + size)
    named: set[int] = set()

    def pairs(items: list[tuple[str, object]]) -> object:
        if len(items) != 1 or items[0][0] != _BLOB:
            return dict(items)  # JSON keys are strings: their hashes are random per process
        index = items[0][1]
        if type(index) is not int or not 0 <= index < count or index in named:
            raise Malformed(
                "the reply names raw bytes it does not hold, or names them twice"
            )
        named.add(index)
        return bytes(view[starts[index] : starts[index + 1]])

    try:
        text = bytes(view[offset : offset + length]).decode("ascii")
        return json.loads(text, object_pairs_hook=pairs)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise Malformed(f"the reply is not valid JSON ({type(error).__name__})") from None


def _shape(field: object) -> list[int]:
    if type(field) is not list or len(field) > 32:
        raise Malformed("a tensor's shape is not a short list of sizes")
    if not all(type(n) is int and n >= 0 for n in field):
        raise Malformed("a tensor's shape is not a short list of sizes")
    return field


def _distinct_hashes(keys: list) -> None:
    """Refuse keys that are not plain values, or two keys that hash alike (an honest dict's
    keys are distinct strings, numbers or tuples of them; a string's hash is random per
    process, so no one can make strings collide)."""
    others = [key for key in keys if type(key) is not str]
    if not all(isinstance(key, (int, float, tuple, type(None))) for key in others):
        raise Malformed("a dict key that is not a plain value")
    try:
        if len({hash(key) for key in others}) < len(others):
            raise TooLarge("the result is a dict whose keys hash alike (refused unread)")
    except TypeError:
        raise Malformed("a dict key that cannot be hashed") from None


# The length of each kind of node of fixed form (a list, tuple, dict or gradient node has two).
FIELDS = {"plain": 2, "array": 5, "module": 3, "remote": 4, "opaque": 4}


class _Reader:
    """One walk of :func:`decode`: the budget left, the deadline, the maker of stand-ins; one
    method per kind of node, which refuses a node that is not of its form."""

    def __init__(self, remote, deadline: float | None):
        self.nodes, self.bytes = DECODE_NODES, DECODE_BYTES
        self.remote, self.deadline = remote, deadline

    def spend(self, nodes: int, data: int = 0) -> None:
        self.nodes, self.bytes = self.nodes - nodes, self.bytes - data
        if self.nodes < 0 or self.bytes < 0:
            raise TooLarge(
                f"the result is too large to check (over {DECODE_NODES:,} values or "
                f"{DECODE_BYTES >> 20} MB)"
            )
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TooLarge(
                "the result took longer to read back than the check's time limit"
            )

    def walk(self, node: object, depth: int) -> object:
        if depth > 4 * DEPTH:
            raise TooLarge(f"the result is nested more than {4 * DEPTH} levels deep")
        if type(node) is not list or len(node) < 2 or type(node[0]) is not str:
            raise Malformed("not a node")
        self.spend(len(node[1]) if type(node[1]) is list else 1)
        read = getattr(self, "read_" + node[0], None) if node[0].isalpha() else None
        if read is None or len(node) != FIELDS.get(node[0], 2):
            raise _unexpected(node)
        return read(node, depth + 1)

    def read_plain(self, node: list, depth: int) -> object:
        if type(node[1]) not in (type(None), bool, int, float, str):
            raise _unexpected(node)
        self.spend(0, len(node[1]) if type(node[1]) is str else 0)
        return node[1]

    def read_list(self, node: list, depth: int) -> list | tuple:
        if type(node[1]) is not list:
            raise _unexpected(node)
        items = [self.walk(item, depth) for item in node[1]]
        return items if node[0] == "list" else tuple(items)

    read_tuple = read_list

    def read_dict(self, node: list, depth: int) -> dict:
        if type(node[1]) is not list:
            raise _unexpected(node)
        if not all(type(pair) is list and len(pair) == 2 for pair in node[1]):
            raise Malformed("a dict entry is not a pair")
        pairs = [(self.walk(k, depth), self.walk(v, depth)) for k, v in node[1]]
        _distinct_hashes([key for key, _ in pairs])
        return dict(pairs)

    def read_array(self, node: list, depth: int) -> object:
        if type(node[4]) is not bytes:
            raise _unexpected(node)
        kind, dtype = node[1], _text(node, 2)
        if dtype not in DTYPES or kind not in ("tensor", "ndarray", "scalar"):
            raise Malformed(f"unexpected array {kind!r:.40} of dtype {dtype!r:.40}")
        self.spend(0, len(node[4]))
        array = np.frombuffer(node[4], dtype=dtype).reshape(_shape(node[3])).copy()
        if kind == "tensor":
            return torch.from_numpy(array.astype(array.dtype.newbyteorder("=")))
        return array if kind == "ndarray" else array[()]

    def read_module(self, node: list, depth: int) -> ModuleState:
        state = self.walk(node[2], depth)
        if not isinstance(state, dict):
            raise Malformed("a module's state is not a mapping")
        tensors = {
            str(k)[:TEXT]: v for k, v in state.items() if isinstance(v, torch.Tensor)
        }
        return ModuleState(_text(node, 1), tensors)

    def read_gradient(self, node: list, depth: int) -> GradientReport:
        fields = self.walk(node[1], depth)
        if not (isinstance(fields, tuple) and len(fields) == 3):
            raise Malformed("a gradient report is not three fields")
        if not all(isinstance(f, dict) for f in fields[1:]):
            raise Malformed("the gradients are not a mapping")
        reached = {str(k)[:TEXT]: str(v)[:TEXT] for k, v in fields[1].items()}
        gradients = {str(k): v for k, v in fields[2].items() if isinstance(v, torch.Tensor)}
        return GradientReport(bool(fields[0]), reached, gradients)

    def read_remote(self, node: list, depth: int) -> object:
        if self.remote is None or type(node[1]) is not int:
            raise _unexpected(node)
        return self.remote(node[1], _text(node, 2), _text(node, 3))

    def read_opaque(self, node: list, depth: int) -> Opaque:
        return Opaque(_text(node, 1), _text(node, 2), _text(node, 3))


def _unexpected(node: list) -> Malformed:
    return Malformed(f"unexpected {node[0][:40]!r} node")


def _text(node: list, index: int) -> str:
    if type(node[index]) is not str:
        raise Malformed(f"a {node[0]} node lacks a text field")
    return node[index][:TEXT]


def decode(
    node: object,
    remote: Callable[[int, str, str], object] | None = None,
    deadline: float | None = None,
) -> object:
    """Rebuild a value from :func:`encode`'s nodes (after :func:`unpack`: lists for tuples) in
    one walk; ``remote`` makes the stand-in of an object that stayed in the worker (without it,
    such an object is refused). ``TooLarge`` past :data:`DECODE_NODES` values,
    :data:`DECODE_BYTES` or ``4 * DEPTH`` levels, or after ``deadline`` (``time.monotonic()``);
    ``Malformed`` when it is not what :func:`encode` makes."""
    return _Reader(remote, deadline).walk(node, 0)
