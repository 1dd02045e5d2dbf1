"""Library attention is recognised by what runs, not by its file name: a copy
of ``F.multi_head_attention_forward`` compiled from torch's own source under another name trips
the same wire as the original, however the copy is made."""

import pytest

from selfcheck.solutions import write
from transformer_lab.selfcheck import Limits
from transformer_lab.selfcheck.core import Failed
from transformer_lab.selfcheck.worker import LoadFailed, RemoteFunction, Worker

SOURCE = """
import torch
import torch.nn.functional as F

_text = open(F.__file__, encoding="utf-8").read()
_start = _text.index("\\ndef multi_head_attention_forward(")
_end = _text.index("\\ndef ", _start + 5)
COPY = _text[_start:_end]


def _run(mha):
    torch.manual_seed(0)
    x = torch.randn(3, 1, 4)
    weights = [torch.randn(12, 4), torch.randn(12)]
    out = [torch.randn(4, 4), torch.randn(4)]
    return mha(x, x, x, 4, 2, *weights, None, None, False, 0.0, *out, training=False)[0]
"""

AT_LOAD = """
_space = dict(vars(F))
exec(compile(COPY, "my_attention.py", "exec"), _space)
_mine = _space["multi_head_attention_forward"]


def hog():
    return _run(_mine)
"""

FUNCTION_FROM_CONSTANTS = """
import types


def hog():
    module = compile(COPY, "my_attention.py", "exec")
    code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    return _run(types.FunctionType(code, dict(vars(F))))
"""

IMPORTED_FROM_A_FILE = """
import importlib, sys


def hog():
    with open("my_attention.py", "w", encoding="utf-8") as out:
        out.write("from torch.nn.functional import *\\n")
        out.write("from torch.nn.functional import _in_projection_packed, _in_projection\\n")
        out.write("from torch.nn.functional import _mha_shape_check, _canonical_mask\\n")
        out.write("from torch.nn.functional import _none_or_dtype\\n")
        out.write("from torch.overrides import has_torch_function, handle_torch_function\\n")
        out.write("import math, torch\\nfrom torch import Tensor\\n" + COPY)
    sys.path.insert(0, ".")
    return _run(importlib.import_module("my_attention").multi_head_attention_forward)
"""


@pytest.mark.parametrize(
    "copy",
    [AT_LOAD, FUNCTION_FROM_CONSTANTS, IMPORTED_FROM_A_FILE],
    ids=["at-load", "function-from-constants", "imported-from-a-file"],
)
def test_a_recompiled_copy_of_torch_attention_trips_the_wire(tmp_path, copy):
    path = write(tmp_path, "student.py", SOURCE + copy)
    with Worker(path, ["hog"], Limits(seconds=60)) as worker:
        try:
            worker.start()
        except LoadFailed as failed:  # the copy made while the file loads
            assert "multi_head_attention_forward" in str(failed)
            return
        worker.begin_check(60)
        with pytest.raises(Failed) as failed:
            returned = RemoteFunction(worker, "hog").call()
            print(returned)  # the copy ran: shown in the failure
    assert failed.value.finding.code == "library_attention"


def test_a_students_own_attention_is_not_taken_for_a_copy(tmp_path):
    own = """
import math
import torch


def hog():
    q = k = v = torch.randn(1, 3, 4)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v
"""
    path = write(tmp_path, "student.py", own)
    with Worker(path, ["hog"], Limits(seconds=60)) as worker:
        worker.start()
        worker.begin_check(60)
        assert RemoteFunction(worker, "hog").call().result.shape == (1, 3, 4)
