"""Where a check gets the answers it compares with: stored outputs, or the instructor's code.

Some checks grade a function the chapters never show (the two stretch exercises). The code that
computes their right answer, and the code of the mistakes' wrong answers (each one a small edit
of the right one), would hand a student the answer, so the student edition does not ship it.
Such a check asks this module instead, by name, and runs in one of three modes:

- ``public`` (the default, and the only one a student's copy can run): the answers on the
  check's public inputs, read from ``data/stored_outputs.json``. An input that is not stored
  raises ``LookupError``, which the mistake matcher treats as "this mistake cannot be
  computed here".
- ``hidden`` (the instructor's autograder): the live functions the instructor's package passes
  in (:func:`provide`; this package never imports it), on inputs drawn from a seed derived from
  a course secret and the submission (:func:`submission_seed`, :func:`fresh_seed`): recorded in
  the results, so that a regrade reproduces the grade.
- ``record``: live, and every answer given is kept, with the input it was given for. The
  instructor's generator (``python -m transformer_lab_instructor.stored``) runs the public
  inputs in this mode and writes what it kept to the JSON file; ``tests/test_editions.py``
  checks that the file is what the generator writes today.

The check's own logic (shapes, dtypes, the order of the diagnoses, the messages) is written
once, in its module, and is the same in every mode. A stored answer is exact: a tensor is kept
as its raw bytes, its dtype and its shape. For a gradient check, the stored answer is the
reference's value and its Jacobian at the public input, so that the expected gradient for a
weighting drawn afresh is still computed here, from ``J``.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from transformer_lab.selfcheck.core import Mistake

PUBLIC, HIDDEN, RECORD = "public", "hidden", "record"
DATA = Path(__file__).resolve().parents[1] / "data" / "stored_outputs.json"
REFERENCE = "reference"  # the answer key of a check's right answer

_state: dict[str, object] = {"mode": PUBLIC, "recorded": None, "seed": 0}
_LIVE: list[Callable[[], dict]] = []  # what provide() was given


def provide(live: Callable[[], dict]) -> None:
    """The instructor's package passes its answers in: ``live()`` returns the table (check ->
    key -> function) that hidden and record mode compute with."""
    _LIVE[:] = [live]


def hidden_problem() -> str | None:
    """Why the hidden checks cannot run here (None when they can)."""
    try:
        _live_table()
    except RuntimeError as error:
        return str(error)
    return None


def mode() -> str:
    """The mode in force: ``public``, ``hidden`` or ``record``."""
    return str(_state["mode"])


@contextlib.contextmanager
def using(new_mode: str, seed: int | None = None) -> Iterator[dict]:
    """Run the block in ``new_mode``; yields what ``record`` mode keeps (check -> input ->
    answers). ``seed``: the hidden inputs' seed (default: drawn afresh)."""
    if new_mode not in (PUBLIC, HIDDEN, RECORD):
        raise ValueError(f"mode must be public, hidden or record, got {new_mode!r}")
    if new_mode != PUBLIC:
        _live_table()  # fails here, with the reason, where the instructor's package is missing
    saved = dict(_state)
    recorded: dict = {}
    seed = secrets.randbelow(2**31) if seed is None else seed
    _state.update(mode=new_mode, recorded=recorded, seed=seed)
    try:
        yield recorded
    finally:
        _state.clear()
        _state.update(saved)


def fresh_seed(public: int) -> int:
    """``public`` (the seed of a public input) in public and record mode; in hidden mode a seed
    derived from the run's seed (:func:`using`) and ``public``, so that every probe has its own
    and a regrade with the same seed draws the same inputs."""
    if mode() != HIDDEN:
        return public
    digest = hashlib.sha256(f"{_state['seed']}:{public}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 2**31


def submission_seed(submission: bytes, secret: str | None) -> int:
    """The hidden inputs' seed for one submission: an HMAC of its bytes under the course's
    ``secret`` (a student who cannot read the secret cannot predict it); drawn afresh when no
    secret is set (the results record it either way)."""
    if not secret:
        return secrets.randbelow(2**31)
    digest = hmac.new(secret.encode(), submission, hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") % 2**31


def reference(check: str) -> Callable[..., object]:
    """The right answer of ``check``, as a function of the check's inputs."""
    return answer(check, REFERENCE)


def answer(check: str, key: str) -> Callable[..., object]:
    """Answer ``key`` of ``check`` (the reference, or one mistake's wrong answer) as a function."""

    def call(*args: object) -> object:
        if mode() == PUBLIC:
            return _stored(check, key, args)
        value = _live_table()[check][key](*args)
        if mode() == RECORD:
            _record(check, key, args, value)
        return value

    call.__name__ = call.__qualname__ = f"{check}_{key}".replace(":", "_")
    return call


def mistake(check: str, code: str, message: str, advice: str, key: str = "") -> Mistake:
    """A mistake of ``check`` whose wrong answer is answer ``key`` (default: its ``code``)."""
    return Mistake(code, message, advice, answer(check, key or code))


def _live_table() -> dict[str, dict[str, Callable[..., object]]]:
    if not _LIVE:
        raise RuntimeError(
            "the hidden checks need the instructor's answers, which only the instructor's "
            "package passes in (import transformer_lab_instructor, or run its autograder)"
        )
    return _LIVE[0]()


# --------------------------------------------------------------------------- inputs and outputs


def input_key(args: tuple) -> str:
    """A digest of the exact inputs (tensor bytes, dtypes, shapes; a layer's weights)."""
    digest = hashlib.sha256()
    _feed(digest, args)
    return digest.hexdigest()[:24]


def _feed(digest, value: object) -> None:
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        digest.update(f"T{tensor.dtype}{tuple(tensor.shape)}".encode())
        digest.update(tensor.numpy().tobytes() if tensor.numel() else b"")
    elif isinstance(value, torch.nn.Module):
        digest.update(f"M{type(value).__name__}{getattr(value, 'num_heads', '')}".encode())
        for name, tensor in sorted(value.state_dict().items()):
            digest.update(name.encode())
            _feed(digest, tensor)
    elif isinstance(value, (tuple, list)):
        digest.update(f"L{len(value)}".encode())
        for item in value:
            _feed(digest, item)
    else:
        digest.update(f"V{value!r}".encode())


def encode(value: object) -> dict:
    """``value`` as JSON data that decodes to exactly the same value."""
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        raw = tensor.numpy().tobytes() if tensor.numel() else b""
        return {
            "dtype": str(tensor.dtype).removeprefix("torch."),
            "shape": list(tensor.shape),
            "bytes": base64.b64encode(raw).decode("ascii"),
        }
    if isinstance(value, (tuple, list)):
        return {"items": [encode(item) for item in value]}
    return {"value": value}


def decode(data: dict) -> object:
    """The value :func:`encode` wrote."""
    if "items" in data:
        return tuple(decode(item) for item in data["items"])
    if "value" in data:
        return data["value"]
    dtype = getattr(torch, data["dtype"])
    raw = bytearray(base64.b64decode(data["bytes"]))
    if not raw:
        return torch.empty(data["shape"], dtype=dtype)
    return torch.frombuffer(raw, dtype=dtype).reshape(data["shape"]).clone()


def _record(check: str, key: str, args: tuple, value: object) -> None:
    entry = _state["recorded"].setdefault(check, {}).setdefault(input_key(args), {})
    stored = encode(value)
    leaves = [
        i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad
    ]
    if leaves and isinstance(value, torch.Tensor):
        (index,) = leaves  # one differentiable input per gradient check
        function = _live_table()[check][key]

        def of_input(tensor: torch.Tensor) -> torch.Tensor:
            return function(*args[:index], tensor, *args[index + 1 :])

        jacobian = torch.autograd.functional.jacobian(of_input, args[index].detach())
        stored["jacobian"] = {"input": index, **encode(jacobian)}
    entry[key] = stored


@functools.cache
def _data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))["checks"]


def _stored(check: str, key: str, args: tuple) -> object:
    entry = _data().get(check, {}).get(input_key(args), {})
    if key not in entry:
        raise LookupError(
            f"{check}: no stored answer {key!r} for this input (only the public inputs have "
            "stored answers; the hidden checks compute theirs)"
        )
    value, jacobian = decode(entry[key]), entry[key].get("jacobian")
    return value if jacobian is None else _expanded(value, jacobian, args)


def _expanded(value: torch.Tensor, jacobian: dict, args: tuple) -> torch.Tensor:
    """The reference's first-order expansion at the stored input: its value there, and the
    reference's own gradient for any weighting of the result."""
    point = args[jacobian["input"]]
    if not (isinstance(point, torch.Tensor) and point.requires_grad):
        return value
    matrix = decode(jacobian).reshape(value.numel(), point.numel()).to(point.dtype)
    step = (point - point.detach()).reshape(-1)
    return value.to(point.dtype) + (matrix @ step).reshape(value.shape)
