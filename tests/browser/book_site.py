"""The built book as a reader sees it: served on 127.0.0.1, opened in Debian's headless chromium.

Shared by the browser tests (tests/browser/test_browser_*.py). Nothing here downloads anything:
chromium comes from Debian (installed by `make browser`, as `make test-portability` does), Playwright drives it through
``executable_path`` (never ``playwright install``), and axe-core is read from node_modules/
(installed by `make setup` from package-lock.json).

Which build is tested: ``$BOOK_HTML`` if set (e.g. ``/tmp/build-me/_build/html``), else
``_build/html``. Screenshots go to the ``screenshots/`` folder beside it (``_build/screenshots``).
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

from book_pages import ROOT, read_page

# The browser itself (where chromium is, its flags, the 127.0.0.1-only guard) lives in
# tools/chromium.py, shared with the Binder rehearsal; re-exported for the browser tests.
from chromium import (  # noqa: F401 (re-exported)
    CHROMIUM_ARGS,
    HOST,
    block_third_party,
    chromium_path,
    is_local,
)

HTML_DIR_VARIABLE = "BOOK_HTML"
# axe-core findings that come from the theme's own chrome, not from the book's content, and that
# _config.yml and CSS cannot fix. Each entry: axe rule id -> {CSS selector of the theme element:
# why it is excused}. A finding is excused only if its element matches the selector. The
# accessibility test fails when an entry no longer matches anything, so the list cannot rot.
THEME_EXCEPTIONS: dict[str, dict[str, str]] = {
    "label-content-name-mismatch": {
        # pydata-sphinx-theme's search buttons (navbar and sidebar): accessible name "Search",
        # visible text "Search Ctrl+K". The name holds the label a voice user would say; the extra
        # visible text is the keyboard-shortcut hint.
        "button.search-button-field.search-button__button": (
            "theme search button: name 'Search', visible 'Search Ctrl+K' (shortcut hint)"
        ),
        # pydata-sphinx-theme's colour-mode toggle: accessible name "Color mode"; axe counts the
        # titles of its three icons (Light / Dark / System Settings) as visible text.
        "button.theme-switch-button": (
            "theme colour-mode toggle: name 'Color mode', "
            "icon titles Light/Dark/System Settings"
        ),
    },
}

AXE_SCRIPT = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# One viewport for every check of a page: the nothing-cut-off check is about a 1280-px-wide
# window (a laptop's); the height only sets the fold, not what the full-page screenshot holds.
VIEWPORT = {"width": 1280, "height": 800}
# Collapsible content inside the page's article (the theme's navigation also uses <details>).
DETAILS = "article details"
TOGGLE_ADMONITIONS = "article .admonition.toggle, article .admonition.dropdown"
# A phone held upright (an iPhone SE's CSS pixels): no page may be wider than this; a wide table
# or block of code scrolls inside its own box instead.
PHONE = {"width": 375, "height": 667}
TIMEOUT_MS = (
    60_000  # generous: the machine is shared and chromium is slow to start under load
)


def html_dir() -> Path:
    """The folder of the built HTML under test (``$BOOK_HTML`` or ``_build/html``)."""
    return Path(os.environ.get(HTML_DIR_VARIABLE) or ROOT / "_build" / "html").resolve()


def screenshot_dir() -> Path:
    return html_dir().parent / "screenshots"


def page_html(page: Path) -> str:
    """The built HTML path of a source page, relative to the HTML root (``chapters/01-x.html``)."""
    return page.resolve().relative_to(ROOT).with_suffix(".html").as_posix()


def page_id(page: Path) -> str:
    return page.resolve().relative_to(ROOT).as_posix()


def is_notebook(page: Path) -> bool:
    """True when the page is executed (it declares a kernel), so it gets a launch button."""
    return bool(read_page(page).metadata.get("kernelspec"))


def book_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


class _RecordingHandler(SimpleHTTPRequestHandler):
    """Serve files quietly, recording every (path, status) on the server (``server.served``)."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass

    def log_request(self, code: object = "-", size: object = "-") -> None:
        self.server.served.append((self.path, int(getattr(code, "value", code))))


class BookServer:
    """Serve ``root`` on 127.0.0.1 on a free port, from a background thread."""

    def __init__(self, root: Path) -> None:
        handler = functools.partial(_RecordingHandler, directory=str(root))
        self._server = ThreadingHTTPServer((HOST, 0), handler)
        self._server.served = []  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.origin = f"http://{HOST}:{self._server.server_address[1]}"

    def __enter__(self) -> BookServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def url(self, relative: str) -> str:
        return f"{self.origin}/{relative}"

    @property
    def served(self) -> list[tuple[str, int]]:
        """Every request answered so far, in order: (path, HTTP status)."""
        return self._server.served  # type: ignore[attr-defined]

    def errors_between(self, start: int, end: int) -> list[str]:
        """Requests answered with an HTTP error among ``served[start:end]``."""
        return [
            f"{path}: HTTP {status} (server side)"
            for path, status in self.served[start:end]
            if status >= 400
        ]


@dataclass
class Records:
    """What the browser reported during one stretch of a page's life."""

    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    third_party_requests: list[str] = field(default_factory=list)


@dataclass
class PageReport:
    """Everything observed while a reader's browser loaded one page, then opened its dropdowns.

    Built by the ``visit`` fixture (tests/browser/conftest.py) from one served load, in an order
    that keeps each check honest: what is seen on load (text, screenshot, axe) is taken before
    anything is opened. ``from_disk`` and ``math_from_disk`` come from a second, file:// load.
    """

    url: str
    status: int | None
    on_load: Records = field(default_factory=Records)
    math: dict = field(default_factory=dict)
    images_without_alt: list[str] = field(default_factory=list)
    figures_without_alt: list[str] = field(default_factory=list)
    image_count: int = 0
    links: list[str] = field(default_factory=list)
    dropdowns: int = 0
    visible_text: str = ""
    visible_sections: dict = field(
        default_factory=dict
    )  # VISIBLE_SECTIONS' {text, ids}, on load
    axe_violations: dict[str, list[dict]] = field(default_factory=dict)
    screenshot: Path | None = None
    dropdown_problems: list[str] = field(default_factory=list)
    after_opening: Records = field(default_factory=Records)
    visible_text_opened: str = ""
    cut_off: dict = field(default_factory=dict)
    phone: dict = field(
        default_factory=dict
    )  # PHONE_WIDTH at PHONE's size, everything open
    from_disk: Records = field(default_factory=Records)
    math_from_disk: dict = field(default_factory=dict)


def watch(page, console_errors: list[str], failed: list[str]) -> None:
    """Record console errors, uncaught exceptions and failed local requests of ``page``.

    Requests to other hosts are handled by ``block_third_party`` (recorded and aborted).
    """
    page.on(
        "console",
        lambda message: (
            message.type == "error"
            and console_errors.append(
                f"console.error: {message.text} (at {message.location.get('url', '?')})"
            )
        ),
    )
    page.on(
        "pageerror", lambda error: console_errors.append(f"uncaught exception: {error}")
    )

    def on_failed(request) -> None:
        if is_local(request.url):
            failed.append(f"{request.url}: {request.failure}")

    def on_response(response) -> None:
        if response.status >= 400:
            failed.append(f"{response.url}: HTTP {response.status}")

    page.on("requestfailed", on_failed)
    page.on("response", on_response)


def wait_for_math(page) -> None:
    """Wait until MathJax (if the page loaded it) has typeset the page."""
    page.evaluate(
        """async () => {
            if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
                await window.MathJax.startup.promise;
            }
            await document.fonts.ready;
        }"""
    )


MATH_PROBE = r"""() => {
    const maths = Array.from(document.querySelectorAll('.math'));
    const untypeset = maths.filter(m => !m.querySelector('mjx-container'))
                           .map(m => m.textContent.trim().slice(0, 80));
    const merrors = Array.from(document.querySelectorAll('mjx-merror'))
                         .map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 80));
    // Prose only: code, outputs and typeset maths may legitimately hold backslashes and dollars.
    const skip = 'pre, code, script, style, textarea, mjx-container, .highlight, .cell_output, .output';
    const article = document.querySelector('article') || document.body;
    const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    const raw = [];
    const tex = /\$\$|\\[()\[\]]|\\(begin|end)\{|\\[A-Za-z]{2,}/;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement && node.parentElement.closest(skip)) continue;
        const text = node.textContent;
        if (tex.test(text)) raw.push(text.trim().slice(0, 80));
    }
    return {
        math_elements: maths.length,
        mathjax_loaded: !!(window.MathJax && window.MathJax.startup && window.MathJax.version),
        mathjax_version: window.MathJax && window.MathJax.version || null,
        untypeset: untypeset,
        errors: merrors,
        raw_tex: raw,
    };
}"""

# Called with book_pages.FILE_NAME_ALT: alt text that is empty or a file name/path counts as missing.
IMAGE_PROBE = r"""(fileNamePattern) => {
    const fileName = new RegExp(fileNamePattern, 'i');
    const meaningful = text => { const t = (text || '').trim(); return t !== '' && !fileName.test(t); };
    const describe = el => el.outerHTML.slice(0, 160);
    const images = Array.from(document.querySelectorAll('img'));
    const noAlt = images.filter(img => !meaningful(img.getAttribute('alt'))).map(describe);
    const figures = Array.from(document.querySelectorAll('figure'));
    const figuresNoAlt = figures.filter(fig => {
        // Typeset maths (MathJax SVG, in captions) and hidden icons are not the figure's picture.
        const pictures = Array.from(fig.querySelectorAll('img, svg, [role="img"]')).filter(
            p => !p.closest('mjx-container, [aria-hidden="true"]'));
        if (!pictures.length) return true;
        return !pictures.every(p => meaningful(p.getAttribute('alt') || p.getAttribute('aria-label')));
    }).map(describe);
    return {count: images.length, no_alt: noAlt, figures_no_alt: figuresNoAlt};
}"""


# The article's text as the reader sees it (innerText leaves out what is hidden or collapsed).
VISIBLE_TEXT = "() => (document.querySelector('article') || document.body).innerText"

# The same text with the alt text of every image on view in its place, and with markers ⟦S3⟧ …
# ⟦E3⟧ around each labelled section (section 3 of ``ids``), so a test can tell what a reader
# sees *before*, inside or after a given section (tests/browser/book_answers.py parses it). The
# markers and alt texts are added for one innerText and removed again: the page is left as found.
VISIBLE_SECTIONS = r"""() => {
    const article = document.querySelector('article') || document.body;
    const added = [];
    const insert = (node, where, text) => {
        const span = document.createElement('span');
        span.textContent = text;
        node[where](span);
        added.push(span);
    };
    for (const img of article.querySelectorAll('img')) {
        if (img.getClientRects().length === 0) continue;  // in a closed dropdown, or hidden
        insert(img, 'after', ` [image: ${(img.getAttribute('alt') || '').trim()}] `);
    }
    const sections = [];
    const ids = {};
    for (const element of article.querySelectorAll('[id]')) {
        const section = element.closest('section');
        if (!section) continue;
        let index = sections.indexOf(section);
        if (index < 0) {
            index = sections.push(section) - 1;
        }
        ids[element.id] = index;
    }
    sections.forEach((section, index) => {
        insert(section, 'prepend', `⟦S${index}⟧`);
        insert(section, 'append', `⟦E${index}⟧`);
    });
    const text = article.innerText;
    added.forEach(span => span.remove());
    return {text: text, ids: ids};
}"""

DETAILS_STATE = """el => {
    const body = Array.from(el.children).filter(c => c.tagName.toLowerCase() !== 'summary');
    const visible = body.filter(c => { const r = c.getBoundingClientRect();
                                       return r.width > 0 && r.height > 0; });
    return {open: el.open,
            title: (el.querySelector(':scope > summary') || el).innerText.trim().slice(0, 60),
            visible_text: visible.map(c => c.innerText).join(' ').trim()};
}"""

ADMONITION_STATE = """el => {
    const body = Array.from(el.children).filter(c => !c.classList.contains('admonition-title'));
    const visible = body.filter(c => { const r = c.getBoundingClientRect();
                                       return r.width > 0 && r.height > 0
                                              && getComputedStyle(c).visibility !== 'hidden'; });
    return {open: !el.classList.contains('toggle-hidden'),
            title: (el.querySelector('.admonition-title') || el).innerText.trim().slice(0, 60),
            visible_text: visible.map(c => c.innerText).join(' ').trim()};
}"""


# Called with a dropdown element: its kind, its state (one of the two above) and, with its handle
# (the summary or the title) scrolled to the middle of the window, the point a reader clicks and,
# where the click would land on anything else, what that is (no point where the handle has no size).
DROPDOWN = f"""el => {{
    const details = el.tagName.toLowerCase() === 'details';
    const state = (details ? ({DETAILS_STATE}) : ({ADMONITION_STATE}))(el);
    const handle = el.querySelector(details ? ':scope > summary' : ':scope > .admonition-title');
    let point = null, covered_by = null;
    if (handle) {{
        handle.scrollIntoView({{block: 'center', inline: 'nearest', behavior: 'instant'}});
        const r = handle.getBoundingClientRect();
        if (r.width > 0 && r.height > 0) {{
            point = {{x: r.left + r.width / 2, y: r.top + r.height / 2}};
            const hit = document.elementFromPoint(point.x, point.y);
            if (!hit || !handle.contains(hit)) {{
                covered_by = !hit ? 'nothing' : hit.tagName.toLowerCase()
                    + (hit.id ? '#' + hit.id : '')
                    + String(hit.className || '').split(/\\s+/).filter(c => c)
                                                   .map(c => '.' + c).join('');
            }}
        }}
    }}
    return {{...state, kind: details ? 'details' : 'toggle admonition', point, covered_by}};
}}"""


def exercise_dropdowns(page) -> list[str]:
    """Click every dropdown on ``page``; return one line per problem found.

    Document order (one combined selector), so a dropdown nested in another, of either kind, is
    reached only after its parent has been opened. A dropdown that does not open is a problem
    of its own, not an exception: the page's other checks share this load and must still report.

    Each click is a reader's: the mouse pressed in the middle of the summary or title, scrolled
    into view, where nothing else may be drawn over it. (Playwright's ``click()`` checks the same
    before it clicks, but waits for the page to be still for two frames at every step: about
    0.1 s a dropdown, 6 s on the homework page's 49.)
    """
    from playwright.sync_api import Error as PlaywrightError

    problems = []
    for index, element in enumerate(
        page.query_selector_all(f"{DETAILS}, {TOGGLE_ADMONITIONS}")
    ):
        before = element.evaluate(DROPDOWN)
        kind = before["kind"]
        state = DETAILS_STATE if kind == "details" else ADMONITION_STATE
        name = f"dropdown #{index + 1} ({kind}) {before['title']!r}"
        if before["open"] or before["visible_text"]:
            problems.append(f"{name} is open on load (hints must start closed)")
            continue
        if before["point"] is None:
            problems.append(
                f"{name} did not open on a click: its summary or title is not shown"
            )
            continue
        if before["covered_by"]:
            problems.append(
                f"{name} did not open on a click: the click lands on {before['covered_by']}, "
                "not on its summary or title"
            )
            continue
        page.mouse.click(before["point"]["x"], before["point"]["y"])
        after = element.evaluate(state)
        if not after["open"]:  # an opening that is not done within the click's own events
            try:
                page.wait_for_function(f"el => ({state})(el).open", arg=element)
            except PlaywrightError as error:
                problems.append(
                    f"{name} did not open on a click: {error.message.splitlines()[0]}"
                )
                continue
            after = element.evaluate(state)
        if not after["visible_text"]:
            problems.append(f"{name} opened but shows no text")
    return problems


OPEN_EVERYTHING = """() => {
    document.querySelectorAll('article details').forEach(d => { d.open = true; });
    document.querySelectorAll('article .toggle-hidden').forEach(
        el => el.classList.remove('toggle-hidden'));
}"""

MIN_FIGURE_SCALE = 0.65  # 12.5 px (9 pt at 100 dpi) × 0.65 ≈ 8 px

# Called with MIN_FIGURE_SCALE, on a page with everything opened.
CUT_OFF = r"""(minScale) => {
    const describe = el => (el.innerText || el.getAttribute('alt') || '').trim()
                           .split('\n')[0].slice(0, 70);
    const shown = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
    const blocks = Array.from(document.querySelectorAll(
        'article pre, article .cell_output .output, article .cell_output table'));
    const wide = [];
    for (const el of blocks) {
        if (!shown(el)) continue;
        // A table may overflow the box that holds it rather than its own box.
        const box = el.tagName === 'TABLE' ? el.parentElement : el;
        if (el.scrollWidth > box.clientWidth + 1) {
            wide.push({kind: el.tagName.toLowerCase(), content: el.scrollWidth, box: box.clientWidth,
                       text: describe(el)});
        }
    }
    const small = [];
    for (const img of document.querySelectorAll('article .cell_output img')) {
        if (!shown(img) || !img.naturalWidth) continue;
        const scale = img.getBoundingClientRect().width / img.naturalWidth;
        if (scale < minScale) {
            small.push({src: img.getAttribute('src').split('/').pop(), natural: img.naturalWidth,
                        shown: Math.round(img.getBoundingClientRect().width),
                        scale: Math.round(scale * 100) / 100, alt: describe(img)});
        }
    }
    return {wide: wide, small: small};
}"""


# The page's width on a phone, and what makes it wider: every element on the page (not hidden,
# not fixed) that reaches past the viewport's right edge with no ancestor that clips or scrolls
# it (the outermost of each such chain, at most 10), so the message names the culprit.
PHONE_WIDTH = r"""() => {
    const width = document.documentElement.clientWidth;
    const clipped = el => {
        for (let a = el.parentElement; a; a = a.parentElement) {
            if (a === document.body || a === document.documentElement) return false;
            if (getComputedStyle(a).overflowX !== 'visible') return true;
        }
        return false;
    };
    // Hidden or fixed (the theme's off-canvas drawers) takes no room on the page.
    const placed = el => { for (let a = el; a; a = a.parentElement) {
        const s = getComputedStyle(a);
        if (s.position === 'fixed' || s.visibility === 'hidden') return false; } return true; };
    const past = el => { const r = el.getBoundingClientRect();
                         return r.width > 0 && r.right > width + 1 && placed(el); };
    const wide = [];
    for (const el of document.querySelectorAll('body *')) {
        if (!past(el) || clipped(el) || (el.parentElement && past(el.parentElement)
                                           && !clipped(el.parentElement)
                                           && el.parentElement !== document.body)) continue;
        wide.push({tag: el.tagName.toLowerCase(), classes: el.className.toString().slice(0, 60),
                   right: Math.round(el.getBoundingClientRect().right),
                   text: (el.innerText || '').trim().split('\n')[0].slice(0, 60)});
        if (wide.length >= 10) break;
    }
    return {viewport: width, page: document.documentElement.scrollWidth, wide: wide};
}"""


class _Ids(HTMLParser):
    """Collect the anchors a page offers: every ``id`` and every ``<a name>``."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and (name == "id" or (tag == "a" and name == "name")):
                self.ids.add(value)


def anchors_of(html: str) -> set[str]:
    parser = _Ids()
    parser.feed(html)
    return parser.ids


class _Resources(HTMLParser):
    """Collect every URL a page *loads* (not links it offers): scripts, styles, images, frames."""

    LOADS = {
        "script": ("src",),
        "img": ("src", "srcset"),
        "iframe": ("src",),
        "source": ("src", "srcset"),
        "video": ("src", "poster"),
        "audio": ("src",),
        "embed": ("src",),
        "object": ("data",),
        "track": ("src",),
        "input": ("src",),
    }
    LINK_RELS = {
        "stylesheet",
        "preload",
        "modulepreload",
        "prefetch",
        "icon",
        "shortcut",
        "manifest",
        "apple-touch-icon",
        "preconnect",
        "dns-prefetch",
    }

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in self.LOADS.get(tag, ()):
            if values.get(name):
                self.urls.extend(
                    part.strip().split(" ")[0] for part in values[name].split(",")
                )
        if tag == "link" and values.get("href"):
            rels = set((values.get("rel") or "").lower().split())
            if rels & self.LINK_RELS:
                self.urls.append(values["href"])


def loaded_urls(html: str) -> list[str]:
    parser = _Resources()
    parser.feed(html)
    return parser.urls
