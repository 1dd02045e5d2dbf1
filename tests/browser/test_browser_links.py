"""Links: every internal link resolves, and every page's Binder link launches that very page.

Internal links are the ``<a href>`` of each page as rendered in chromium (so links the theme adds
with JavaScript count too) that point at the book's own server. Each target must answer HTTP 200,
and a ``#fragment`` must name an element (``id`` or ``<a name>``) of the target page.

Launch links are read from the built HTML and compared with the URL built from
``_config.yml``'s ``launch_buttons.binderhub_url``, the repository and branch being built
(``reader_notebooks.repository_settings``: a GitHub run's own, else ``_config.yml``'s
``repository``) and the page's reader notebook (``notebooks/<page>.ipynb``).
"""

from __future__ import annotations

import functools
import html as html_module
import re
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from book_pages import ROOT, toc_pages
from book_site import anchors_of, book_config, is_notebook, page_html, page_id
from reader_notebooks import repository_settings

pytestmark = pytest.mark.browser

PAGES = [page_html(page) for page in toc_pages()]
IDS = [page_id(page) for page in toc_pages()]


@functools.cache
def fetch(url: str) -> tuple[int, str]:
    """GET a URL of the local test server: (status, text or '' if not HTML)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (127.0.0.1 only)
            kind = response.headers.get("Content-Type", "")
            body = response.read()
            return response.status, body.decode(
                "utf-8", "replace"
            ) if "html" in kind else ""
    except urllib.error.HTTPError as error:
        return error.code, ""


def broken_links(server, links: list[str]) -> list[str]:
    problems = []
    for link in sorted(set(links)):
        if not link.startswith(server.origin + "/"):
            continue  # another site (repository, Binder): not fetched, the tests are offline
        parts = urlsplit(link)
        target = f"{server.origin}{parts.path}"
        status, html = fetch(target)
        if status != 200:
            problems.append(f"{link}: HTTP {status}")
        elif parts.fragment and unquote(parts.fragment) not in anchors_of(html):
            problems.append(
                f"{link}: {parts.path} has no element with id {unquote(parts.fragment)!r}"
            )
    return problems


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_internal_links_resolve(visit, server, relative):
    report = visit(relative)
    internal = [link for link in report.links if link.startswith(server.origin)]
    assert internal, f"{relative} has no internal link at all (not even the navigation?)"
    problems = broken_links(server, report.links)
    assert not problems, f"{relative}: broken internal links:\n" + "\n".join(problems)


def expected_launch_url(page) -> str:
    """The page's reader notebook (notebooks/<page>.ipynb, written by binder/postBuild) on the
    student repository of the repository being built (``reader_notebooks.repository_settings``:
    the GitHub run's in CI, else ``_config.yml``'s)."""
    config = book_config()
    settings = repository_settings()
    binderhub = config["launch_buttons"]["binderhub_url"].rstrip("/")
    interface = config["launch_buttons"].get("notebook_interface", "classic")
    assert interface == "jupyterlab", "launch in JupyterLab"
    notebook = Path("notebooks") / Path(page_id(page)).with_suffix(".ipynb")
    return (
        f"{binderhub}/v2/gh/{settings['student_owner']}/{settings['student_name']}/"
        f"{settings['launch_branch']}"
        f"?urlpath=lab/tree/{notebook.as_posix()}"
    )


def binder_links(html: str, binderhub: str) -> list[str]:
    return [
        html_module.unescape(href)
        for href in re.findall(r'href="([^"]+)"', html)
        if html_module.unescape(href).startswith(binderhub)
    ]


@pytest.mark.parametrize("page", toc_pages(), ids=page_id)
def test_launch_link_opens_this_page(book_html, page):
    binderhub = book_config()["launch_buttons"]["binderhub_url"].rstrip("/")
    links = binder_links(
        (book_html / page_html(page)).read_text(encoding="utf-8"), binderhub
    )
    if is_notebook(page):
        expected = expected_launch_url(page)
        assert links, (
            f"{page_id(page)} is executed but its built page has no Binder launch link"
        )
        assert set(links) == {expected}, (
            f"{page_id(page)}: launch links {sorted(set(links))}, expected exactly {expected}"
        )
    else:
        assert not links, f"{page_id(page)} has no code, yet links to Binder: {links}"


def test_repository_url_is_named_in_one_place():
    """``repository.url`` names the repository once; launch links and Binder derive from it."""
    url = book_config()["repository"]["url"].rstrip("/")
    owner_and_name = urlsplit(url).path.strip("/")
    in_config = (ROOT / "_config.yml").read_text(encoding="utf-8").count(owner_and_name)
    assert in_config == 1, (
        f"_config.yml names {owner_and_name!r} {in_config} times; keep only repository.url"
    )
    in_binder = [
        path.name
        for path in (ROOT / "binder").iterdir()
        if path.is_file() and owner_and_name in path.read_text(encoding="utf-8")
    ]
    assert not in_binder, f"binder/ files must not repeat the repository name: {in_binder}"
