"""Sphinx extension (local to this book): repairs to the HTML that Jupyter Book 1 writes.

Registered in _config.yml under ``sphinx.local_extensions``. The browser tests
(tests/browser/) fail without it.

Duplicate inline scripts. Sphinx 7.4 records a script added after the builder starts (as
sphinx-togglebutton and sphinx-thebe do) twice: once with the file name ``None`` and once with
``''``. Each page then repeats those inline scripts, and the repeated
``const THEBE_JS_URL = ...`` throws "Identifier 'THEBE_JS_URL' has already been declared" in
every reader's console. This extension drops the repeated copies before each page is written.

Parallel reading. ``make book`` reads (and so executes) pages in parallel (tools/build_book.py).
Sphinx falls back to a serial read, with a warning that ``-W`` turns into an error, when any
extension leaves its parallel safety undeclared. Two extensions that Jupyter Book loads do:
sphinx-multitoc-numbering only replaces how section numbers are assigned from the merged table
of contents, in the main process after every page is read, and keeps no per-page state;
sphinx-jupyterbook-latex acts only for the LaTeX builders. Both are declared read-safe here.

Launch links and downloads of the reader notebooks. JupyterLab and a downloaded ``.ipynb`` know
nothing of glue, ``literalinclude`` or cross-page references, so the rocket button and the
download button offer each page's *reader notebook* (tools/reader_notebooks.py) instead of the
page's MyST source and MyST-NB's executed copy: the Binder link's ``urlpath`` opens
``notebooks/<page>.ipynb`` (written there by binder/postBuild), and ``_sources/<page>.ipynb``
(the ".ipynb" download) is the reader notebook whose links go to the published HTML. In a GitHub
Actions run, the repository and branch of the repository button are the run's
(``reader_notebooks.repository_settings``); elsewhere ``_config.yml``'s ``repository`` decides.
The launch links, the downloads and the notebooks' links name the student edition's public
repository (its own in the student edition, ``<repository>-student`` beside the instructor's), so
a fork's book launches the fork's student repository.

Long lines of code outside executed cells. Code shown from the package (``literalinclude``) and
in exercise hints may be wider than the page's code column; ``static/book_code.css`` wraps it
inside the column instead of cutting it off behind a scroll bar.

Edition and licences. ``CITATION.cff`` is the one home of the edition and its release date:
``show_edition`` reads them when the configuration is loaded, puts them in every page's footer
with the licences, and offers them to the pages as the MyST substitutions ``{{ edition }}`` and
``{{ edition_date }}`` (the errata page uses them).

Explorers. ``static/explorers.js`` shows the interactive figures whose data the package
exports in a cell's output (``transformer_lab.explorers``); it is the book's own file, served
from ``_static/``, so the explorers work offline and from ``file://``.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path
from typing import Any

import nbformat
import yaml
from sphinx.application import Sphinx
from sphinx.util import logging

# tools/ holds the reader-notebook generator (one home for how a page becomes a notebook).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import reader_notebooks  # noqa: E402

LOGGER = logging.getLogger(__name__)


def _script_key(script: Any) -> tuple:
    filename = getattr(script, "filename", script) or ""
    attributes = getattr(script, "attributes", {}) or {}
    return (
        str(filename),
        tuple(sorted((key, str(value)) for key, value in attributes.items())),
    )


def drop_duplicate_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """Keep the first of each identical script (same file, same inline body, same attributes)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


# What the kernel's widgets sent while a page executed, which MyST-NB embeds in the page. The
# explorers' widgets (code/transformer_lab/explorers.py) are for notebooks: the page draws each
# explorer from its HTML with static/explorers.js, so their state would only weigh the page down.
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def drop_widget_state(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """Leave out the widget state script MyST-NB adds to a page whose cells made widgets."""
    scripts = context.get("script_files")
    if scripts:
        scripts[:] = [
            script
            for script in scripts
            if (getattr(script, "attributes", {}) or {}).get("type") != WIDGET_STATE
        ]


STATIC = Path(__file__).resolve().parent / "static"


def add_static_folder(app: Sphinx, config: Any) -> None:
    """Serve this extension's CSS (``static/``) with the book's own static files."""
    config.html_static_path.append(str(STATIC))


PARALLEL_SAFE_EXTENSIONS = ("sphinx_multitoc_numbering", "sphinx_jupyterbook_latex")


def declare_parallel_safe(app: Sphinx, config: Any) -> None:
    """Declare the extensions above safe for parallel reading (see the module docstring)."""
    for name in PARALLEL_SAFE_EXTENSIONS:
        extension = app.extensions.get(name)
        if extension is not None and extension.parallel_read_safe is None:
            extension.parallel_read_safe = True


def follow_repository(app: Sphinx, config: Any) -> None:
    """The repository and branch of the launch and repository buttons: the GitHub run's, if any."""
    settings = reader_notebooks.repository_settings()
    config.html_theme_options["repository_url"] = settings["url"]
    config.html_theme_options["repository_branch"] = settings["branch"]


CITATION = Path(__file__).resolve().parents[1] / "CITATION.cff"
LICENCES_NOTE = (
    "Code: MIT licence (LICENSE). Prose, figures and data: CC BY 4.0 (LICENSE-CONTENT)."
)


def edition() -> dict[str, str]:
    """The edition's version and release date (ISO), from CITATION.cff."""
    citation = yaml.safe_load(CITATION.read_text(encoding="utf-8"))
    return {
        "edition": str(citation["version"]),
        "edition_date": str(citation["date-released"]),
    }


def show_edition(app: Sphinx, config: Any) -> None:
    """The edition, its date and the licences in every page's footer, and as substitutions."""
    facts = edition()
    config.myst_substitutions = {**getattr(config, "myst_substitutions", {}), **facts}
    config.html_theme_options["extra_footer"] = (
        f"<p>Edition {facts['edition']}, released {facts['edition_date']}. "
        f"{LICENCES_NOTE}</p>"
    )


@functools.cache
def _book() -> tuple[frozenset[Path], Any, dict[str, str]]:
    """The pages with reader notebooks, the book's targets, the repository: read once a build."""
    pages = frozenset(page.resolve() for page in reader_notebooks.reader_pages())
    return pages, reader_notebooks.read_book(), reader_notebooks.repository_settings()


def read_book_before_writing(app: Sphinx, env: Any) -> list[str]:
    """Read every page once in the main process, before Sphinx forks its parallel writers: each
    writer inherits the parsed pages instead of parsing the whole book again."""
    _book()
    return []


def offer_reader_notebook(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """Point the Binder link at the page's reader notebook, and put it behind ".ipynb"."""
    source = Path(app.env.doc2path(pagename)).resolve()
    pages, book, settings = _book()
    if source not in pages:
        return
    urlpath = reader_notebooks.binder_urlpath(source)
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if "url" in button and "?urlpath=" in button["url"]:
                url = re.sub(r"\?urlpath=.*$", f"?urlpath={urlpath}", button["url"])
                # Binder builds the student edition's repository (tools/editions.py), never
                # the instructor's.
                button["url"] = re.sub(
                    r"/v2/gh/[^/]+/[^/]+/[^?]+",
                    lambda m: (
                        "/v2/gh/{student_owner}/{student_name}/{launch_branch}".format(
                            **settings
                        )
                    ),
                    url,
                )
    if context.get("ipynb_source"):
        target = Path(app.outdir) / "_sources" / context["ipynb_source"]
        try:
            notebook = reader_notebooks.make_reader_notebook(
                source, links="html", book=book, settings=settings
            )
        except reader_notebooks.StaleReference as error:
            # The page changed since its reference was refreshed: `make test` fails on that
            # (nbval); the build itself goes on, with MyST-NB's executed copy behind ".ipynb".
            LOGGER.info(f"no reader notebook for the download button: {error}")
            return
        except reader_notebooks.ReaderError as error:
            LOGGER.warning(f"no reader notebook for the download button: {error}")
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)


def setup(app: Sphinx) -> dict[str, Any]:
    # config-inited comes after every extension's setup().
    app.connect("config-inited", add_static_folder)
    app.connect("config-inited", declare_parallel_safe)
    app.connect("config-inited", follow_repository)
    app.connect("config-inited", show_edition)
    # After sphinx-book-theme (priority 501) has made the buttons and copied the executed page.
    app.connect("env-updated", read_book_before_writing)
    app.connect("html-page-context", offer_reader_notebook, priority=600)
    app.add_css_file("book_code.css")
    # The explorers' script (static/explorers.js, code/transformer_lab/explorers.py): does
    # nothing on a page without an explorer.
    app.add_js_file("explorers.js", defer="defer")
    # Late (priority 900): after myst-nb and the theme have added their per-page scripts.
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    app.connect("html-page-context", drop_widget_state, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
