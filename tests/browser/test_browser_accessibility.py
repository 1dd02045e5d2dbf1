"""axe-core, run inside chromium on every page, in the light and the dark colour scheme.

axe-core comes from node_modules/ (npm package pinned in package-lock.json, installed by
`make setup`); it is injected as an inline script, so running it fetches nothing. A page fails on
any violation of impact "serious" or "critical", except the narrow theme-level exceptions listed
(with reasons) in ``THEME_EXCEPTIONS`` in book_site.py.
"""

from __future__ import annotations

import pytest

from book_pages import toc_pages
from book_site import THEME_EXCEPTIONS, page_html, page_id

pytestmark = pytest.mark.browser

PAGES = [page_html(page) for page in toc_pages()]
IDS = [page_id(page) for page in toc_pages()]
BLOCKING = {"serious", "critical"}


def blocking_violations(violations: list[dict]) -> list[str]:
    found = []
    for violation in violations:
        if violation["impact"] not in BLOCKING:
            continue
        for node in violation["nodes"]:
            if node["excused_by"]:
                continue  # theme chrome, see THEME_EXCEPTIONS in book_site.py
            found.append(
                f"[{violation['impact']}] {violation['id']} ({violation['help']}) at {node['target']}\n"
                f"    {node['html']}\n    {node['summary']}"
            )
    return found


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_no_serious_accessibility_violations(visit, relative, scheme):
    problems = blocking_violations(visit(relative).axe_violations[scheme])
    assert not problems, f"{relative} ({scheme} scheme): axe-core found\n" + "\n".join(
        problems
    )


def test_theme_exceptions_are_still_needed(visit):
    """Every excused (rule, theme element) must still occur somewhere, so the list cannot rot."""
    used = {
        (violation["id"], node["excused_by"])
        for relative in PAGES
        for violations in visit(relative).axe_violations.values()
        for violation in violations
        for node in violation["nodes"]
        if node["excused_by"]
    }
    declared = {
        (rule, selector)
        for rule, selectors in THEME_EXCEPTIONS.items()
        for selector in selectors
    }
    stale = sorted(declared - used)
    assert not stale, (
        f"THEME_EXCEPTIONS entries that no page triggers any more, remove them: {stale}"
    )
