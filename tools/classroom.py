"""A class of submissions for the self-check's grader: right, wrong, unfinished and hostile files.

    from classroom import SOLUTION, write_class
    write_class(folder, 100)  # 40 right, 30 wrong, 15 stubs, 15 hostile, named s000.py ...

``make bench`` (tools/bench.py) grades such a folder to measure submissions per minute, and the
self-check's tests use the same files (tests import tools, never the reverse). The hostile files
loop, exit, crash, flood their output, fork a ``setsid`` daemon and try to overwrite a classmate;
each gets one line and harms no one else.
"""

from __future__ import annotations

from pathlib import Path

SOLUTION = """
import math
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers


def attention(q, k, v, padding):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores.masked_fill(padding[:, None, :], float("-inf")), dim=-1)
    return weights @ v, weights


def masked_mean(x, padding):
    keep = (~padding).unsqueeze(-1).to(x.dtype)
    return (x * keep).sum(1) / keep.sum(1)


def accuracy(logits, labels):
    return ((logits > 0).float() == labels.float()).float().mean().item()


def train_bpe_tokenizer(corpus, vocab_size):
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"])
    tokenizer.train_from_iterator(corpus, trainer)
    return tokenizer


def tokens_per_word(tokenizer, words):
    return {word: len(tokenizer.encode(word).tokens) for word in words}


def embedding_parameters(vocab_size, d):
    return vocab_size * d
"""

STRETCH = """

def causal_padding_mask(padding):
    length = padding.shape[1]
    future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)
    return future[None] | padding[:, None, :]


def multi_head_attention(x, padding, mha):
    b, length, d = x.shape
    h = mha.num_heads
    q, k, v = (x @ mha.in_proj_weight.T + mha.in_proj_bias).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, length, h, d // h).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d // h)).masked_fill(padding[:, None, None, :], float("-inf"))
    out = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, length, d)
    return out @ mha.out_proj.weight.T + mha.out_proj.bias
"""


def with_body(source: str, function: str, line: str) -> str:
    """``source`` with ``line`` inserted as the first statement of ``function``."""
    header = f"def {function}("
    start = source.index(header)
    end = source.index(":\n", start) + 2
    return source[:end] + f"    {line}\n" + source[end:]


def write(folder, name: str, source: str):
    path = folder / name
    path.write_text(source, encoding="utf-8")
    return path


WRONG = [  # (name of the function, the line that breaks it)
    ("attention", "q = q * 2"),
    ("masked_mean", "padding = ~padding"),
    ("accuracy", "labels = 1 - labels"),
    ("embedding_parameters", "d = d + 1"),
    ("tokens_per_word", "words = words[:1]"),
]
HOSTILE = [
    ("masked_mean", "while True: pass"),
    ("accuracy", "import os; os._exit(3)"),
    ("attention", "import sys; sys.exit(0)"),
    ("accuracy", "while True: print('x' * 10000, flush=True)"),
    (
        "embedding_parameters",
        "import os, time\n    if os.fork() == 0:\n        os.setsid()\n"
        "        while True: time.sleep(0.05)",
    ),
]
STUB = """
def attention(q, k, v, padding):
    raise NotImplementedError("Exercise 3")


def masked_mean(x, padding):
    raise NotImplementedError("Exercise 2")
"""


def submission(index: int, total: int) -> str:
    """The source of submission ``index`` of ``total``: the first 40% right, then 30% wrong,
    15% unfinished and 15% hostile (each kind cycling through its variants)."""
    right, wrong, stubs = (round(total * share) for share in (0.4, 0.3, 0.15))
    if index < right:
        return SOLUTION + STRETCH
    if index < right + wrong:
        function, line = WRONG[(index - right) % len(WRONG)]
        return with_body(SOLUTION, function, line)
    if index < right + wrong + stubs:
        return STUB
    function, line = HOSTILE[(index - right - wrong - stubs) % len(HOSTILE)]
    return with_body(SOLUTION, function, line)


def write_class(folder: Path | str, total: int = 100) -> list[Path]:
    """Write ``total`` submissions ``s000.py``, ``s001.py``, ... into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [write(folder, f"s{i:03d}.py", submission(i, total)) for i in range(total)]
