"""Fixtures of the browser tests: the built book on 127.0.0.1 and one headless chromium.

Nothing is skipped: a missing build, a missing chromium or a missing axe-core fails the tests
with the command that fixes it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from book_pages import FILE_NAME_ALT
from book_site import (
    AXE_SCRIPT,
    CHROMIUM_ARGS,
    DETAILS,
    HTML_DIR_VARIABLE,
    IMAGE_PROBE,
    MATH_PROBE,
    THEME_EXCEPTIONS,
    TIMEOUT_MS,
    TOGGLE_ADMONITIONS,
    VIEWPORT,
    BookServer,
    PageReport,
    block_third_party,
    chromium_path,
    html_dir,
    screenshot_dir,
    wait_for_math,
    watch,
)

AXE_RUN = """async (exceptions) => {
    const result = await axe.run(document, {resultTypes: ['violations']});
    const excuse = (rule, target) => {
        const element = target.length === 1 ? document.querySelector(target[0]) : null;
        const selectors = Object.keys(exceptions[rule] || {});
        return (element && selectors.find(selector => element.matches(selector))) || null;
    };
    return result.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 200),
                                  summary: (n.failureSummary || '').slice(0, 300),
                                  excused_by: excuse(v.id, n.target)})),
    }));
}"""


@pytest.fixture(scope="session")
def book_html() -> Path:
    root = html_dir()
    if not (root / "index.html").exists():
        pytest.fail(
            f"no built book at {root} (no index.html): run `make book` first "
            f"(or point ${HTML_DIR_VARIABLE} at another build's _build/html)",
            pytrace=False,
        )
    return root


@pytest.fixture(scope="session")
def server(book_html: Path):
    with BookServer(book_html) as running:
        yield running


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    try:
        executable = chromium_path()
    except RuntimeError as error:
        pytest.fail(str(error), pytrace=False)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def axe_source() -> str:
    if not AXE_SCRIPT.exists():
        pytest.fail(
            f"axe-core is missing ({AXE_SCRIPT}): run `make setup` (npm ci)", pytrace=False
        )
    return AXE_SCRIPT.read_text(encoding="utf-8")


class OpenPage:
    """A page open in its own browser context, with everything it did recorded."""

    def __init__(self, browser, server, relative: str, from_disk: bool = False) -> None:
        self.relative = relative
        self.console: list[str] = []
        self.failed: list[str] = []
        self.third_party: list[str] = []
        self._server = server
        self._served_before = len(server.served)
        self.context = browser.new_context(
            viewport=VIEWPORT, color_scheme="light", reduced_motion="reduce"
        )
        self.context.set_default_timeout(TIMEOUT_MS)
        block_third_party(self.context, self.third_party)
        self.page = self.context.new_page()
        watch(self.page, self.console, self.failed)
        url = (html_dir() / relative).as_uri() if from_disk else server.url(relative)
        self.response = self.page.goto(url, wait_until="load")
        self.page.wait_for_load_state("networkidle")
        wait_for_math(self.page)

    def close(self) -> None:
        """Close the context; add the HTTP errors the server saw (e.g. /favicon.ico) to ``failed``."""
        self.page.wait_for_load_state("networkidle")
        self.context.close()
        for error in self._server.errors_since(self._served_before):
            if not any(error.split(":")[0] in seen for seen in self.failed):
                self.failed.append(error)


@pytest.fixture(scope="session")
def open_page(browser, server):
    """Open a built page in a fresh context that aborts and records requests leaving 127.0.0.1.

    ``from_disk=True`` opens the HTML file itself (file://) instead of the served copy.

    The caller must ``close()`` what it gets (use try/finally).
    """

    def opener(relative: str, from_disk: bool = False) -> OpenPage:
        if not (html_dir() / relative).exists():
            pytest.fail(
                f"{relative} is listed in _toc.yml but not built in {html_dir()}: run `make book`",
                pytrace=False,
            )
        return OpenPage(browser, server, relative, from_disk=from_disk)

    return opener


@pytest.fixture(scope="session")
def visit(open_page, axe_source):
    """Load a page once, as a reader would, and report everything the tests check (cached)."""
    reports: dict[str, PageReport] = {}
    shots = screenshot_dir()
    shots.mkdir(parents=True, exist_ok=True)

    def report_for(relative: str) -> PageReport:
        if relative in reports:
            return reports[relative]
        opened = open_page(relative)
        page = opened.page
        try:
            report = PageReport(
                url=page.url, status=opened.response.status if opened.response else None
            )
            report.math = page.evaluate(MATH_PROBE)
            images = page.evaluate(IMAGE_PROBE, FILE_NAME_ALT)
            report.image_count = images["count"]
            report.images_without_alt = images["no_alt"]
            report.figures_without_alt = images["figures_no_alt"]
            report.dropdowns = len(
                page.query_selector_all(f"{DETAILS}, {TOGGLE_ADMONITIONS}")
            )
            report.links = page.eval_on_selector_all(
                "a[href]", "els => els.map(e => e.href)"
            )
            report.screenshot = shots / (
                relative.replace("/", "__").removesuffix(".html") + ".png"
            )
            page.screenshot(path=str(report.screenshot), full_page=True)
            page.add_script_tag(content=axe_source)
            report.axe_violations["light"] = page.evaluate(AXE_RUN, THEME_EXCEPTIONS)
            # The theme follows the reader's colour scheme: check the dark one too.
            page.emulate_media(color_scheme="dark")
            page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
            report.axe_violations["dark"] = page.evaluate(AXE_RUN, THEME_EXCEPTIONS)
        finally:
            opened.close()
        report.console_errors = opened.console
        report.failed_requests = opened.failed
        report.third_party_requests = opened.third_party
        reports[relative] = report
        return report

    return report_for
