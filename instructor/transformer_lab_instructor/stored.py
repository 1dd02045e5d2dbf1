"""The generator of the public self-check's stored answers (``selfcheck/data/stored_outputs.json``).

    python -m transformer_lab_instructor.stored          # rewrite the file
    python -m transformer_lab_instructor.stored --check  # exit 1 if the file is stale

It runs, in ``record`` mode, every computation the public checks of ``causal_padding_mask``,
``multi_head_attention`` and Week 20's tasks ask :mod:`transformer_lab.selfcheck.checks.answers`
for, on their public inputs: the reference on every probe (the main ones, the smallest-input
ladder, the step probes), every known mistake on the main probes, and the reference's Jacobian
on the gradient probe.
``tests/test_editions.py`` checks that the committed file is what this writes."""

from __future__ import annotations

import json
import sys

from transformer_lab.selfcheck.checks import (
    answers,
    debugging,
    masks,
    multihead,
    positions,
    token_ids,
)
from transformer_lab.selfcheck.execution import execute_gradient

# What first_match skips when a mistake cannot be computed on a probe: it is then not stored.
SKIPPED = (ArithmeticError, LookupError, RuntimeError, TypeError, ValueError)


def _variants(mistakes, probe) -> None:
    for mistake in mistakes:
        if mistake.variant is None:
            continue
        try:
            mistake.variant(*probe)
        except SKIPPED:
            continue


def record_masks() -> None:
    for padding in masks.probe_paddings():
        masks.reference(padding)
        _variants(masks.MISTAKES, (padding,))
    for probe in masks.SMALL_PROBES:
        masks.reference(*probe)


def record_multihead() -> None:
    for probe in multihead.main_probes():
        multihead.expected_output(*probe)
        multihead.expected_weights(*probe)
        _variants(multihead.MISTAKES, probe)
        for step in multihead.step_probes(*probe):
            multihead.expected_output(*step)
    execute_gradient(
        multihead.reference, list(multihead.gradient_probe()), ["x"], "self", seed=0
    )


def record_week20() -> None:
    """Every Week-20 answer the public checks can ask for: each reference and each mistake on
    every probe, and the reference on the stage probes of the forwards."""
    for probe in positions.toy_probes():
        answers.reference(positions.TOY_NAME)(*probe)
        _variants(positions.TOY_MISTAKES, probe)
    for probe in positions.table_probes():
        answers.reference(positions.TABLE_NAME)(*probe)
        _variants(positions.TABLE_MISTAKES, probe)
    forwards = [
        (
            positions.NO_POS_NAME,
            positions.model_probe(3),
            positions.no_positions_mistakes(),
        ),
        (positions.SINES_NAME, positions.model_probe(4), positions.sines_mistakes()),
        (debugging.NAME, positions.model_probe(6, broken=True), debugging.mistakes()),
    ]
    stage_one = positions.stage_inputs()["one"]
    for check, model, mistakes in forwards:
        for ids, padding in [*positions.ids_probes(), stage_one]:
            answers.reference(check)(model, ids, padding)
            _variants(mistakes, (model, ids, padding))
    for texts, length in token_ids.probes():
        answers.reference(token_ids.NAME)(texts, length)
        _variants(token_ids.MISTAKES, (texts, length))


def stored_outputs() -> dict:
    """The file's content: every answer the public checks need, by check and input digest."""
    with answers.using(answers.RECORD) as recorded:
        record_masks()
        record_multihead()
        record_week20()
    return {
        "about": "written by python -m transformer_lab_instructor.stored; do not edit",
        "format": 1,
        "checks": recorded,
    }


def text() -> str:
    return json.dumps(stored_outputs(), indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    wanted = text()
    if "--check" in argv:
        current = answers.DATA.read_text(encoding="utf-8") if answers.DATA.exists() else ""
        if current != wanted:
            print(
                f"{answers.DATA} is stale: run python -m transformer_lab_instructor.stored"
            )
            return 1
        return 0
    answers.DATA.parent.mkdir(parents=True, exist_ok=True)
    answers.DATA.write_text(wanted, encoding="utf-8")
    print(f"wrote {answers.DATA} ({len(wanted) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
