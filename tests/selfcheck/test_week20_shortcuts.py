"""Week 20: a pass means the student's own code did the work.

Each function below passes a task by calling the book instead: the model's own forward (with its
``use_positions`` switch flipped), chapter 4's model rebuilt with the handed weights, the broken
model's forward with its bugs switched off, the book's sinusoid table. The check hands a model's
parts with no forward, and the book's models are tripwires in the worker, so none may pass."""

from selfcheck.solutions import write
from transformer_lab.selfcheck import PASSED, check_file

THROUGH_THE_MODEL = """
import torch


def forward_without_positions(model, ids, padding):
    model.use_positions = False
    return model(ids, padding)


def repaired_forward(model, ids, padding):
    from transformer_lab.broken_transformer import broken_forward

    return broken_forward(model, ids, padding, ())


def sinusoidal_positions(length, d_model):
    from transformer_lab.char_transformer import sinusoidal_positions as book

    return book(length, d_model)


def forward_with_sinusoids(model, ids, padding):
    with torch.no_grad():
        model.pos.weight[: ids.shape[1]] = sinusoidal_positions(ids.shape[1], 24)
    model.use_positions = True
    return model(ids, padding)
"""

REBUILT = """
def forward_without_positions(model, ids, padding):
    from transformer_lab.char_transformer import PraiseClassifier

    book = PraiseClassifier(use_positions=False).eval()
    book.load_state_dict(model.state_dict())
    return book(ids, padding)


def repaired_forward(model, ids, padding):
    from transformer_lab.char_transformer import PraiseClassifier

    book = PraiseClassifier().eval()
    book.load_state_dict(model.state_dict())
    return book(ids, padding)
"""


def test_calling_the_book_passes_no_task(tmp_path):
    for name, text in (("model.py", THROUGH_THE_MODEL), ("rebuilt.py", REBUILT)):
        report = check_file(write(tmp_path, name, text), page="week-20")
        attempted = {
            r.name: r
            for r in report.results
            if r.status not in ("not done yet", "not attempted")
        }
        assert attempted, name
        for result in attempted.values():
            assert result.status != PASSED, (name, result.name)
