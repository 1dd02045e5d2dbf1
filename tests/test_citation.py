"""CITATION.cff is valid, and the facts it holds (edition, date, repository) agree everywhere.

CITATION.cff is the one home of the edition and its release date: CHANGELOG.md's newest entry,
the errata page and every page's footer (``_ext/book_html.py``) take them from it.
"""

from __future__ import annotations

import datetime
import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = Path(__file__).parent / "schemas" / "citation-file-format-1.2.0.json"
sys.path.insert(0, str(ROOT / "_ext"))

import book_html  # noqa: E402


def citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def cff_errors(document: dict) -> list[str]:
    """Every way ``document`` breaks the Citation File Format 1.2.0 schema (dates as strings)."""
    # YAML reads an unquoted date as a date; the schema (like cffconvert) checks its string form.
    as_json = json.loads(json.dumps(document, default=str))
    validator = jsonschema.Draft7Validator(
        json.loads(SCHEMA.read_text(encoding="utf-8")),
        format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER,
    )
    return [error.message for error in validator.iter_errors(as_json)]


def test_citation_file_is_valid_citation_file_format_1_2_0():
    assert cff_errors(citation()) == []


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.pop("authors"), "'authors' is a required property"),
        (lambda d: d.update({"license": "MIT-ish"}), "MIT-ish"),
        (lambda d: d.update({"date-released": "1st of December"}), "1st of December"),
    ],
)
def test_the_validation_can_fail(change, message):
    broken = citation()
    change(broken)
    assert any(message in error for error in cff_errors(broken))


def test_the_repository_is_the_books_and_both_licences_are_named_and_present():
    data = citation()
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert data["repository-code"] == config["repository"]["url"]
    assert data["license"] == ["MIT", "CC-BY-4.0"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "Attribution 4.0 International" in (ROOT / "LICENSE-CONTENT").read_text()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "LICENSE" in readme and "LICENSE-CONTENT" in readme and "CITATION.cff" in readme


def test_changelog_opens_with_the_citations_edition_and_date():
    data = citation()
    assert isinstance(data["date-released"], datetime.date)
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert headings[0] == f"{data['version']} — {data['date-released'].isoformat()}"


def test_footer_and_substitutions_come_from_the_citation():
    class Config:
        html_theme_options: dict = {}

    config = Config()
    book_html.show_edition(None, config)
    data = citation()
    assert config.myst_substitutions == {
        "edition": data["version"],
        "edition_date": data["date-released"].isoformat(),
    }
    footer = config.html_theme_options["extra_footer"]
    assert data["version"] in footer and "CC BY 4.0" in footer and "MIT" in footer
