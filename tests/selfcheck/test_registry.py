"""transformer_lab.selfcheck.checks.registry: one label per exercise, in step with the starters and pages."""

from pathlib import Path

import pytest

from transformer_lab.selfcheck import ALL_CHECKS, CHECKS, STRETCH_CHECKS, load_module
from transformer_lab.selfcheck.checks.registry import BY_NAME, EVERY_CHECK, PAGES

ROOT = Path(__file__).resolve().parents[2]
PAGE_CHECKS = [(page, check) for page, checks in PAGES.items() for check in checks]


def test_names_are_unique_and_stretch_checks_are_optional():
    assert len({c.name for c in EVERY_CHECK}) == len(EVERY_CHECK) == len(BY_NAME)
    assert not any(c.optional for c in CHECKS) and all(c.optional for c in STRETCH_CHECKS)
    assert PAGES["homework"] == ALL_CHECKS


def test_a_required_check_is_on_the_same_page_and_runs_earlier():
    for checks in PAGES.values():
        names = [c.name for c in checks]
        for check in checks:
            if check.requires is not None:
                assert names.index(check.requires) < names.index(check.name)


@pytest.mark.parametrize("page", PAGES)
def test_every_check_is_documented_on_its_page(page):
    text = (ROOT / "exercises" / page / "index.md").read_text(encoding="utf-8")
    assert "python -m transformer_lab.selfcheck" in text
    for check in PAGES[page]:
        if not check.optional:
            assert check.name in text, f"{check.name} is not mentioned on the {page} page"


@pytest.mark.parametrize(
    "page, check", PAGE_CHECKS, ids=[f"{p}:{c.name}" for p, c in PAGE_CHECKS]
)
def test_starter_functions_name_their_exercise(page, check):
    module = load_module(ROOT / "exercises" / page / "starter.py")
    function = getattr(module, check.name, None)
    if function is None and check.optional:
        pytest.skip(f"the starter has no {check.name} yet (a stretch exercise)")
    with pytest.raises(NotImplementedError, match=rf"^{check.exercise} \({check.name}\)"):
        function(*([None] * function.__code__.co_argcount))
