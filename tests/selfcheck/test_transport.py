"""transformer_lab.selfcheck.transport: results come back from a worker as plain data (JSON and
raw bytes, never a pickle), so no returned object can run code in the process that grades it,
and no forged reply can hang or bloat it; a diagnosis made through a worker is the one made
in-process."""

import inspect
import pickle
import struct
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import trainers

from selfcheck import mutants
from selfcheck.mutants import RIGHT, WRONG
from selfcheck.solutions import SOLUTION, write
from transformer_lab.selfcheck import Limits, check_file
from transformer_lab.selfcheck.checks.registry import BY_NAME
from transformer_lab.selfcheck.execution import GradientReport, Opaque
from transformer_lab.selfcheck.transport import (
    JSON_BYTES,
    MAGIC,
    Malformed,
    ModuleState,
    TooLarge,
    bounded_repr,
    decode,
    encode,
    pack,
    unpack,
)
from transformer_lab.selfcheck.worker.parent import RemoteFunction, Worker
from transformer_lab.tokenizer import TINY_CORPUS, train_bpe_tokenizer


def travel(value):
    return decode(unpack(pack(encode(value))))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        2.5,
        "text",
        [1, (2, 3)],
        {"cat": 1, "dog": 2},
        torch.arange(6, dtype=torch.float32).reshape(2, 3),
        torch.tensor([True, False]),
        torch.tensor(7),
        torch.zeros(0, 3),
        np.float64(0.75),
        np.float32(0.5),
        np.arange(4).reshape(2, 2),
    ],
)
def test_plain_values_tensors_and_arrays_survive_the_trip(value):
    back = travel(value)
    if isinstance(value, torch.Tensor):
        assert back.dtype == value.dtype and torch.equal(back, value)
    elif isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and np.array_equal(back, value)
    else:
        assert back == value and type(back) is type(value)


def test_tokenizers_modules_and_reports_come_back_as_what_the_checks_need():
    tokenizer = train_bpe_tokenizer(list(TINY_CORPUS), 40)
    # A tokenizer stays where it was made: the parent gets a handle, never the object itself.
    node = encode({"t": tokenizer}, keep=lambda value: 7)
    back = decode(unpack(pack(node)), remote=lambda *a: a)
    assert back == {"t": (7, "tokenizers", "Tokenizer")}
    assert isinstance(travel(tokenizer), Opaque)
    layer = torch.nn.Linear(2, 3)
    state = travel(layer)
    assert isinstance(state, ModuleState) and torch.equal(
        state.state_dict()["weight"], layer.weight.detach()
    )
    assert travel(GradientReport(True, {"x": "finite"})) == GradientReport(
        True, {"x": "finite"}
    )
    gradient = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    back = travel(GradientReport(True, {"x": "finite"}, {"x": gradient}))
    assert back.reached == {"x": "finite"} and torch.equal(back.gradients["x"], gradient)
    trainer = travel(trainers.BpeTrainer(vocab_size=10))
    assert isinstance(trainer, Opaque) and trainer.category == "trainer"
    assert travel(x for x in range(3)).type_name == "generator"


class Explodes:
    def __reduce__(self):
        return (exec, ("raise SystemExit('ran in the parent')",))


def test_the_parent_reads_no_pickle_at_all():
    with pytest.raises(Malformed):
        unpack(pickle.dumps(Explodes()))
    with pytest.raises(Malformed):
        unpack(pickle.dumps(("returned", ("plain", 1), ("list", []))))


def test_sizes_are_checked_before_anything_is_parsed():
    big = struct.pack("<4sQQ", MAGIC, JSON_BYTES + 1, 0)
    with pytest.raises(TooLarge):
        unpack(big)  # refused on its header: the 4 MB it announces are not even there
    honest = pack(["returned", ["plain", 1]])
    for forged in (honest[:-1], honest + b"x", honest[:4] + b"\xff" * 16 + honest[20:]):
        with pytest.raises((Malformed, TooLarge)):
            unpack(forged)


SAME_HASH = (1 << 61) - 1  # every multiple of it hashes to 0


def test_a_dict_whose_keys_hash_alike_is_refused_in_linear_time():
    node = ["dict", [[["plain", SAME_HASH * i], ["plain", 0]] for i in range(60_000)]]
    start = time.perf_counter()
    with pytest.raises(TooLarge, match="hash alike"):
        decode(unpack(pack(node)))
    assert time.perf_counter() - start < 30  # 2 s unloaded; a dict of them: hours
    honest = {i: str(i) for i in range(5000)} | {(1, 2): 0.5, None: 1}
    assert travel(honest) == honest


def test_a_rebuild_that_overruns_the_time_limit_is_refused():
    node = ["list", [["plain", i] for i in range(1000)]]
    with pytest.raises(TooLarge, match="time limit"):
        decode(unpack(pack(node)), deadline=time.monotonic() - 1)


def test_one_value_named_many_times_travels_as_many_copies_and_is_refused():
    node = ["list", [["plain", "x" * 2_000_000]] * 500]  # 2 MB, 500 times
    with pytest.raises(TooLarge):
        unpack(pack(node))
    with pytest.raises(TooLarge):
        unpack(pack(["list", [["array", "tensor", "|u1", [2**20], bytes(2**20)]] * 100]))
    # Raw bytes named twice in a forged reply would be copied once per name: refused.
    tensor = ["array", "tensor", "|u1", [4], b"abcd"]
    assert unpack(pack(["list", [tensor]])) == ["list", [tensor]]
    named = b'["array", "tensor", "|u1", [4], {"\\u0000blob": 0}]'
    document = b'["list", [' + named + b", " + named + b"]]"
    forged = struct.pack("<4sQQQ", MAGIC, len(document), 1, 4) + document + b"abcd"
    with pytest.raises(Malformed, match="twice"):
        unpack(forged)


def test_reprs_are_built_from_bounded_pieces():
    value = ["x" * 2_000_000] * 500
    text = bounded_repr(value, 80)
    assert len(text) <= 80 and text.startswith("['xxxx")
    assert bounded_repr({"a": [1, 2]}, 80) == repr({"a": [1, 2]})
    assert bounded_repr((1, "b"), 80) == repr((1, "b"))


def test_a_returned_object_cannot_run_code_in_the_checking_process(tmp_path):
    marker = tmp_path / "ran.txt"
    source = (
        SOLUTION
        + f"""

class Sneaky(float):
    def __reduce__(self):
        return (exec, ("open({str(marker)!r}, 'w').write('x')",))


def accuracy(logits, labels):
    return Sneaky(0.75)
"""
    )
    report = check_file(write(tmp_path, "student.py", source), only=["accuracy"])
    assert not marker.exists()
    assert report.results[0].status != "passed"


SAMPLE = [
    m
    for m in WRONG + RIGHT
    if m.check in ("accuracy", "train_bpe_tokenizer", "multi_head_attention")
    or m.function.__name__
    in (
        "attention_numpy_weights",
        "attention_fused_alias",
        "attention_fused_in_a_helper",
        "attention_rewrapped",
        "attention_cleans_values",
        "masked_mean_in_place",
        "tokens_lists",
        "tokens_token_to_id",
        "mask_additive",
        "embedding_tensor",
    )
]


# A mutant that calls the book's own code (the book's mask, a tokenizer the catalogue trains with
# the book at import) is a different case in a worker: the book is not there (test_isolation.py).
BOOK_BUILT = ("transformer_lab", "GLOBAL_TOKENIZER")


def calls_the_book(function) -> bool:
    """Whether a mutant's code names the book; one made with exec from the book's own source
    (chapter 3's function pasted into the homework) has no file of its own, and is the book's."""
    try:
        source = inspect.getsource(function)
    except OSError:
        return True
    return any(book in source for book in BOOK_BUILT)


SAMPLE = [m for m in SAMPLE if not calls_the_book(m.function)]
# The worker cannot import the tests: each file is the catalogue's source itself, without its
# imports of the self-check, and with the sampled mutants bound to the checks' names.
CATALOGUE = (
    Path(mutants.__file__)
    .read_text(encoding="utf-8")
    .replace("from transformer_lab.selfcheck import PASSED\n", "PASSED = 'passed'\n")
    .replace(
        "from transformer_lab.selfcheck.checks.registry import BY_NAME\n", "BY_NAME = {}\n"
    )
    .replace("GLOBAL_TOKENIZER = _global_tokenizer()\n", "GLOBAL_TOKENIZER = None\n")
)


@pytest.fixture(scope="module")
def through_a_worker(tmp_path_factory):
    """Each sampled mutant's result from a worker, by label. One worker holds the whole catalogue
    and each check calls its mutant by the mutant's own name (as the runner calls the check's)."""
    path = write(tmp_path_factory.mktemp("mutants"), "student.py", CATALOGUE)
    names = sorted({mutant.function.__name__ for mutant in SAMPLE})
    results = {}
    with Worker(path, names, Limits()) as worker:
        worker.start()
        for mutant in SAMPLE:
            worker.begin_check(Limits().seconds)
            function = RemoteFunction(worker, mutant.function.__name__)
            results[mutant.label] = BY_NAME[mutant.check].run(function)
    return results


@pytest.mark.parametrize("mutant", SAMPLE, ids=[m.label for m in SAMPLE])
def test_a_worker_gives_the_diagnosis_of_an_in_process_run(through_a_worker, mutant):
    result = through_a_worker[mutant.label]
    assert (result.status == "passed") == (mutant.code is None), (
        result.finding or result.summary
    )
    assert result.code == mutant.code
