# One way to run each thing. `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# -W: warnings are errors; -n: nitpicky cross-references; --all: rebuild (and so re-execute) every page.
BOOK_FLAGS := -W -n --keep-going --all

.PHONY: help setup book test refresh bench data clean

help:
	@echo "make book     set up .venv if needed, then build the HTML (every page executed) into _build/html"
	@echo "make test     set up, build the book with -W, then run every test (pages via nbval, package, browser)"
	@echo "make refresh  re-execute every page and rewrite the reference outputs in tests/references"
	@echo "make bench    time a clean build page by page (writes _build/bench.md)"
	@echo "make data     regenerate the synthetic CloudWave data in data/"
	@echo "make clean    remove _build (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Python 3.11 is required (set PYTHON=python3.11)")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

setup: $(STAMP)

book: setup
	$(VENV)/bin/jupyter-book build . $(BOOK_FLAGS)

test: book
	$(PY) -m pytest

refresh: setup
	$(PY) tests/book_pages.py refresh

clean:
	rm -rf _build
