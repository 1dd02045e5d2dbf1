"""Self-checks for the homework: run a student's functions and name the likely mistake.

    python -m transformer_lab.selfcheck [FILE] [--only NAME ...] [--json]
    python -m transformer_lab.selfcheck grade FOLDER --csv results.csv

Each function is called on small, fixed inputs in a worker process with a time limit, and a
wrong answer is compared with what typical mistakes give, so the report names the mistake, what
was expected and what came back. Exit status: 0 when every selected check passes, 1 otherwise,
2 when FILE cannot be loaded. ``checks/`` holds one module per graded concept with its table of
:class:`Mistake` entries; ``worker/`` runs student code (``isolation``: where; ``parent``: start,
time, end; ``serve``: the worker); ``transport`` brings results back as plain data; ``grading/``
holds the commands (``cli``), one file's checks (``runner``), a class (``folder``), the reports.
"""

from transformer_lab.selfcheck.checks.attention import check_attention
from transformer_lab.selfcheck.checks.masks import check_causal_padding_mask
from transformer_lab.selfcheck.checks.metrics import (
    ACCURACY_LABELS,
    ACCURACY_LOGITS,
    check_accuracy,
)
from transformer_lab.selfcheck.checks.multihead import check_multi_head_attention
from transformer_lab.selfcheck.checks.pooling import check_masked_mean
from transformer_lab.selfcheck.checks.registry import ALL_CHECKS, CHECKS, STRETCH_CHECKS
from transformer_lab.selfcheck.checks.tokenizer import check_train_bpe_tokenizer
from transformer_lab.selfcheck.core import (
    ENDED,
    FAILED,
    NOT_ATTEMPTED,
    NOT_DONE,
    NOT_RUN,
    PASSED,
    RAISED,
    TIMED_OUT,
    CheckResult,
    Finding,
)
from transformer_lab.selfcheck.errors import summarise_exception
from transformer_lab.selfcheck.execution import load_module
from transformer_lab.selfcheck.grading.report import Report, format_report
from transformer_lab.selfcheck.grading.runner import check_file
from transformer_lab.selfcheck.worker.parent import Limits

__all__ = [
    "ACCURACY_LABELS",
    "ACCURACY_LOGITS",
    "ALL_CHECKS",
    "CHECKS",
    "ENDED",
    "FAILED",
    "NOT_ATTEMPTED",
    "NOT_DONE",
    "NOT_RUN",
    "PASSED",
    "RAISED",
    "STRETCH_CHECKS",
    "TIMED_OUT",
    "CheckResult",
    "Finding",
    "Limits",
    "Report",
    "check_accuracy",
    "check_attention",
    "check_causal_padding_mask",
    "check_file",
    "check_masked_mean",
    "check_multi_head_attention",
    "check_train_bpe_tokenizer",
    "format_report",
    "load_module",
    "summarise_exception",
]
