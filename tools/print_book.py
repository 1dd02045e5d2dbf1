"""The print edition behind `make pdf`: the built HTML printed to PDF by Debian's chromium.

    python tools/print_book.py [SITE]      # default _build/html; writes into _build/pdf/

Writes two files: ``book.pdf`` (every page of ``_toc.yml``, in its order, from the landing page)
and ``by-hand.pdf`` (the in-class sheet alone, to hand out on paper). Each page is opened from
the built site on 127.0.0.1 (the same server and request guard as the browser tests), rendered
with the print stylesheet (the theme hides its navigation, the explorers hide themselves and
their static figure stays, closed dropdowns such as hints print closed), and printed on A4;
Poppler's ``pdfunite`` (Debian's poppler-utils, installed by `make browser`) joins the
pages into one file. Nothing is downloaded: every request that leaves 127.0.0.1 is refused.

The print CSS that keeps code inside the margin (long lines wrap instead of being cut) is
``_ext/static/book_code.css``; ``tests/test_print_book.py`` checks the PDFs: page count, every
figure present, no code cut at the margin, and the text searchable.
"""

from __future__ import annotations

import concurrent.futures
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from book_pages import ROOT, toc_pages
from chromium import CHROMIUM_ARGS, HOST, block_third_party, chromium_path

OUTPUT = ROOT / "_build" / "pdf"
BY_HAND = "exercises/by-hand/index"
# A4 with 15 mm margins: the code column then holds about 80 characters of the book's monospace.
PAPER = {
    "format": "A4",
    "margin": {"top": "15mm", "bottom": "15mm", "left": "15mm", "right": "15mm"},
}


def page_names() -> list[str]:
    """Site-relative HTML paths of the book in reading order (``_toc.yml``, the landing page first)."""
    return [page.relative_to(ROOT).with_suffix(".html").as_posix() for page in toc_pages()]


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the server's access log is noise here
        pass


def require_site(site: Path) -> None:
    missing = [name for name in page_names() if not (site / name).is_file()]
    if missing:
        raise SystemExit(
            f"{site} lacks {', '.join(missing)}: build the book first (`make book`), then `make pdf`"
        )


def require_poppler() -> str:
    path = shutil.which("pdfunite")
    if path is None:
        raise SystemExit(
            "Poppler's `pdfunite` is not installed: `apt-get install -y poppler-utils` "
            "(`make browser`, `make pdf` and `make test-portability` install it)"
        )
    return path


# Read in the page as it prints (print media, a viewport as wide as A4's text column, 180 mm):
# code blocks whose text runs past their box (cut at the margin on paper), and the article's
# images, with those that did not load or do not show.
PRINT_WIDTH_PX = 680
LAYOUT_SCRIPT = """() => {
  const article = document.querySelector('article') || document.body;
  const shown = (el) => {
    const box = el.getBoundingClientRect();
    return getComputedStyle(el).display !== 'none' && box.width > 0 && box.height > 0;
  };
  const cut = [...article.querySelectorAll('pre')]
    .filter((pre) => shown(pre) && pre.scrollWidth > pre.clientWidth + 1)
    .map((pre) => pre.textContent.split('\\n').find((l) => l.length > 0) || '');
  const images = [...article.querySelectorAll('img')]
    .filter((img) => !img.closest('.tl-explorer'));
  return {
    cut,
    missing: images.filter((img) => !(img.complete && img.naturalWidth > 0 && shown(img)))
      .map((img) => img.getAttribute('src')),
    raster: images.filter((img) => !/\\.svg$/i.test(img.getAttribute('src') || '')).length,
    images: images.length,
  };
}"""


def print_layout_problems(layout: dict) -> list[str]:
    """What would print wrongly, from one page's ``LAYOUT_SCRIPT`` result."""
    return [f"code cut at the margin: {line[:60]!r}" for line in layout["cut"]] + [
        f"figure not shown: {src}" for src in layout["missing"]
    ]


def in_own_thread(function, *args):
    """``function(*args)`` in a thread of its own: Playwright's sync API refuses to run where an
    asyncio loop is already running (a notebook, a test process whose kernel client made one)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function, *args).result()


def print_pages(
    site: Path, names: list[str], folder: Path
) -> tuple[list[Path], dict[str, dict]]:
    """Print each page of ``names`` (site-relative) to its own PDF in ``folder``.

    Returns the PDFs, in order, and each page's print layout (``LAYOUT_SCRIPT``) by name."""
    from playwright.sync_api import sync_playwright

    server = ThreadingHTTPServer((HOST, 0), partial(_QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    printed, refused, layouts = [], [], {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium_path(), args=CHROMIUM_ARGS
            )
            context = browser.new_context(
                viewport={"width": PRINT_WIDTH_PX, "height": 1000}
            )
            block_third_party(context, refused)
            page = context.new_page()
            page.emulate_media(media="print", color_scheme="light")
            for number, name in enumerate(names):
                page.goto(f"http://{HOST}:{server.server_port}/{name}", wait_until="load")
                page.wait_for_function(
                    "() => !window.MathJax || !MathJax.startup || MathJax.startup.promise"
                    " .then(() => true)"
                )
                page.evaluate("() => document.fonts.ready")
                layouts[name] = page.evaluate(LAYOUT_SCRIPT)
                target = folder / f"{number:02d}.pdf"
                page.pdf(path=str(target), print_background=True, **PAPER)
                printed.append(target)
            browser.close()
    finally:
        server.shutdown()
    if refused:
        raise SystemExit(
            f"printing asked for {len(refused)} outside address(es): {refused[:3]}"
        )
    return printed, layouts


def unite(parts: list[Path], target: Path) -> Path:
    """Join ``parts`` into ``target`` with pdfunite (a single part is copied)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if len(parts) == 1:
        shutil.copyfile(parts[0], target)
    else:
        subprocess.run([require_poppler(), *map(str, parts), str(target)], check=True)
    return target


def print_book(
    site: Path, output: Path = OUTPUT
) -> tuple[dict[str, Path], dict[str, dict]]:
    """Write ``book.pdf`` and ``by-hand.pdf`` into ``output``.

    Returns their paths by name and each page's print layout; refuses (SystemExit, naming the
    page and the problem) to write a print edition with code cut at the margin or a figure missing.
    """
    require_site(site)
    require_poppler()
    names = page_names()
    with tempfile.TemporaryDirectory(prefix="print-book-") as scratch:
        parts, layouts = in_own_thread(print_pages, site, names, Path(scratch))
        problems = [
            f"{name}: {problem}"
            for name, layout in layouts.items()
            for problem in print_layout_problems(layout)
        ]
        if problems:
            raise SystemExit("the print edition would be wrong:\n" + "\n".join(problems))
        sheet = parts[names.index(f"{BY_HAND}.html")]
        written = {
            "book": unite(parts, output / "book.pdf"),
            "by-hand": unite([sheet], output / "by-hand.pdf"),
        }
        return written, layouts


def main(argv: list[str]) -> int:
    site = Path(argv[0]) if argv else ROOT / "_build" / "html"
    for name, path in print_book(site.resolve())[0].items():
        print(f"{name}: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
