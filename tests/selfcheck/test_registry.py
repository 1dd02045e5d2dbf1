"""transformer_lab.selfcheck.registry: one label per exercise, in step with the starter and its page."""

from pathlib import Path

import pytest

from transformer_lab.selfcheck import ALL_CHECKS, CHECKS, STRETCH_CHECKS, load_module

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "exercises" / "homework" / "starter.py"


def test_names_are_unique_and_stretch_checks_are_optional():
    assert len({c.name for c in ALL_CHECKS}) == len(ALL_CHECKS)
    assert not any(c.optional for c in CHECKS) and all(c.optional for c in STRETCH_CHECKS)


def test_every_required_check_is_documented_on_the_homework_page():
    page = (ROOT / "exercises" / "homework" / "index.md").read_text(encoding="utf-8")
    assert "python -m transformer_lab.selfcheck" in page
    for check in CHECKS:
        assert check.name in page, f"{check.name} is not mentioned on the homework page"


@pytest.mark.parametrize("check", ALL_CHECKS, ids=[c.name for c in ALL_CHECKS])
def test_starter_functions_name_their_exercise(check):
    module = load_module(STARTER)
    function = getattr(module, check.name, None)
    if function is None and check.optional:
        pytest.skip(f"the starter has no {check.name} yet (a stretch exercise)")
    with pytest.raises(NotImplementedError, match=rf"^{check.exercise} \({check.name}\)"):
        function(*([None] * function.__code__.co_argcount))
