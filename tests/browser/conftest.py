"""Fixtures of the browser tests: the built book on 127.0.0.1 and one headless chromium.

Nothing is skipped: a missing build, a missing chromium or a missing axe-core fails the tests
with the command that fixes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import pickle
import time
from pathlib import Path

import pytest

from book_pages import FILE_NAME_ALT
from book_site import (
    AXE_SCRIPT,
    CHROMIUM_ARGS,
    CUT_OFF,
    DETAILS,
    HTML_DIR_VARIABLE,
    IMAGE_PROBE,
    MATH_PROBE,
    MIN_FIGURE_SCALE,
    OPEN_EVERYTHING,
    PHONE,
    PHONE_WIDTH,
    THEME_EXCEPTIONS,
    TIMEOUT_MS,
    TOGGLE_ADMONITIONS,
    VIEWPORT,
    VISIBLE_SECTIONS,
    VISIBLE_TEXT,
    BookServer,
    PageReport,
    Records,
    block_third_party,
    chromium_path,
    exercise_dropdowns,
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


THEME = "() => document.documentElement.getAttribute('data-theme')"
SET_THEME = """(theme) => theme === null
    ? document.documentElement.removeAttribute('data-theme')
    : document.documentElement.setAttribute('data-theme', theme)"""


class OpenPage:
    """A page open in its own browser context, with everything it did recorded."""

    def __init__(
        self,
        browser,
        server,
        relative: str,
        from_disk: bool = False,
        viewport: dict | None = None,
    ) -> None:
        self.relative = relative
        self.console: list[str] = []
        self.failed: list[str] = []
        self.third_party: list[str] = []
        self._taken = (0, 0, 0)
        self._server = server
        self._served = len(server.served)
        self.context = browser.new_context(
            viewport=viewport or VIEWPORT, color_scheme="light", reduced_motion="reduce"
        )
        self.context.set_default_timeout(TIMEOUT_MS)
        block_third_party(self.context, self.third_party)
        self.page = self.context.new_page()
        watch(self.page, self.console, self.failed)
        self._in_flight: set = set()
        self.page.on("request", lambda request: self._in_flight.add(request))
        for answered in ("requestfinished", "requestfailed"):
            self.page.on(answered, lambda request: self._in_flight.discard(request))
        url = (html_dir() / relative).as_uri() if from_disk else server.url(relative)
        self.response = self.page.goto(url, wait_until="load")
        wait_for_math(self.page)
        self.wait_for_requests()

    def wait_for_requests(self) -> None:
        """Wait until every request the page made has an answer (e.g. the favicon's, after load).

        Playwright's "networkidle" would wait for the same and then 500 ms more of quiet, on each
        load; on the served page the checks that follow give any later request time to show.
        """
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while self._in_flight:
            if time.monotonic() > deadline:
                pending = sorted(request.url for request in self._in_flight)
                raise TimeoutError(f"{self.relative}: requests still unanswered: {pending}")
            self.page.wait_for_timeout(20)

    def records(self) -> Records:
        """What the browser reported since the last call (the first call: since the page opened).

        The failed requests include the HTTP errors the server answered (e.g. /favicon.ico).
        """
        end = len(self._server.served)
        for error in self._server.errors_between(self._served, end):
            if not any(error.split(":")[0] in seen for seen in self.failed):
                self.failed.append(error)
        self._served = end
        lists = (self.console, self.failed, self.third_party)
        fresh = Records(*(items[start:] for items, start in zip(lists, self._taken)))
        self._taken = tuple(len(items) for items in lists)
        return fresh

    def close(self) -> None:
        """Let the requests in flight be answered (and recorded), then close the context."""
        try:
            self.wait_for_requests()
        finally:
            self.context.close()


@pytest.fixture(scope="session")
def open_page(browser, server):
    """Open a built page in a fresh context that aborts and records requests leaving 127.0.0.1.

    ``from_disk=True`` opens the HTML file itself (file://) instead of the served copy;
    ``viewport`` (default ``VIEWPORT``) is the window the page is loaded in, a phone's for what a
    phone reader meets (resizing a loaded page instead sets the theme's sidebar sliding away).

    The caller must ``close()`` what it gets (use try/finally).
    """

    def opener(
        relative: str, from_disk: bool = False, viewport: dict | None = None
    ) -> OpenPage:
        if not (html_dir() / relative).exists():
            pytest.fail(
                f"{relative} is listed in _toc.yml but not built in {html_dir()}: run `make book`",
                pytrace=False,
            )
        return OpenPage(browser, server, relative, from_disk=from_disk, viewport=viewport)

    return opener


@contextlib.contextmanager
def held(lock: Path):
    """Hold an exclusive lock on the file ``lock`` (made if missing) for the ``with`` block."""
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def reports_folder(tmp_path_factory) -> Path:
    """Where this run keeps each page's report for every pytest-xdist worker of the run: the
    run's own temporary folder (each worker's is a subfolder of it), never another run's."""
    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = run / "page-reports"
    folder.mkdir(exist_ok=True)
    return folder


def served_by(report: PageReport, origin: str) -> PageReport:
    """``report`` as if its page had been served from ``origin``: each worker serves the same
    built HTML on a port of its own, and the links tests compare links with their own server."""
    old_origin = "/".join(report.url.split("/", 3)[:3])

    def moved(url: str) -> str:
        return origin + url[len(old_origin) :] if url.startswith(old_origin) else url

    return dataclasses.replace(
        report, url=moved(report.url), links=[moved(link) for link in report.links]
    )


@pytest.fixture(scope="session")
def visit(open_page, axe_source, server, tmp_path_factory):
    """Load each page once per run and report everything the tests check (cached).

    Loading a page (MathJax, fonts, images) is most of a browser test's time, so one served load
    per page feeds every check, in an order that keeps each honest: first what a reader finds on
    load (status, maths, images, links, the visible text, the screenshot, axe in the light then
    the dark scheme), and only then, back in the light scheme, what a reader does: click every
    dropdown, open everything, measure what is cut off, then the page's width on a phone. A
    second, lean file:// load checks the README's first way to read the book (open the HTML
    file).

    The browser tests are spread over pytest-xdist's workers by page (tests/conftest.py), and
    a test of the whole book may run on either; so the report of each page is kept in the run's
    temporary folder, written by the worker that loaded the page while it holds that page's
    lock. Another worker that needs the page waits for the lock and reads the report: each page
    is still loaded once per run.
    """
    reports: dict[str, PageReport] = {}
    shared = reports_folder(tmp_path_factory)
    shots = screenshot_dir()
    shots.mkdir(parents=True, exist_ok=True)

    def report_for(relative: str) -> PageReport:
        if relative not in reports:
            kept = shared / (relative.replace("/", "__") + ".pickle")
            with held(kept.with_suffix(".lock")):
                if kept.is_file():
                    report = served_by(pickle.loads(kept.read_bytes()), server.origin)
                else:
                    report = load_and_check(relative)
                    kept.write_bytes(pickle.dumps(report))
            reports[relative] = report
        return reports[relative]

    def load_and_check(relative: str) -> PageReport:
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
            report.visible_text = page.evaluate(VISIBLE_TEXT)
            report.visible_sections = page.evaluate(VISIBLE_SECTIONS)
            report.screenshot = shots / (
                relative.replace("/", "__").removesuffix(".html") + ".jpg"
            )
            # JPEG: for a reviewer's eye, and chromium encodes a long page in about half the
            # time it takes for PNG (about 1.3 s less per page)
            page.screenshot(
                path=str(report.screenshot), full_page=True, type="jpeg", quality=85
            )
            page.add_script_tag(content=axe_source)
            report.axe_violations["light"] = page.evaluate(AXE_RUN, THEME_EXCEPTIONS)
            # The theme follows the reader's colour scheme: check the dark one too.
            theme = page.evaluate(THEME)
            page.emulate_media(color_scheme="dark")
            page.evaluate(SET_THEME, "dark")
            report.axe_violations["dark"] = page.evaluate(AXE_RUN, THEME_EXCEPTIONS)
            page.emulate_media(color_scheme="light")
            page.evaluate(SET_THEME, theme)
            opened.wait_for_requests()
            report.on_load = opened.records()
            report.dropdown_problems = exercise_dropdowns(page)
            page.evaluate(OPEN_EVERYTHING)
            report.visible_text_opened = page.evaluate(VISIBLE_TEXT)
            report.cut_off = page.evaluate(CUT_OFF, MIN_FIGURE_SCALE)
            # the same page, everything open, on a phone held upright
            page.set_viewport_size(PHONE)
            report.phone = page.evaluate(PHONE_WIDTH)
            page.set_viewport_size(VIEWPORT)
        finally:
            opened.close()
        report.after_opening = opened.records()
        from_disk = open_page(relative, from_disk=True)
        try:
            report.math_from_disk = from_disk.page.evaluate(MATH_PROBE)
        finally:
            from_disk.close()
        report.from_disk = from_disk.records()
        return report

    return report_for
