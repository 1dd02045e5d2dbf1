# One way to run each thing. `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# npm packages the book serves (MathJax) or its browser tests inject (axe-core): package-lock.json.
NPM_STAMP := node_modules/.installed
# Debian packages are installed with apt-get: directly as root (CI), else through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_INSTALL := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get
# `jupyter-book build` with the pages executed in parallel, one per core; `book` adds the strict
# flags (-W -n --keep-going --all: BOOK_FLAGS in tools/build_book.py, their one home) and keeps
# the pages that finished for the next `make book` (MyST-NB's cache); `book --fresh` executes
# every page again, as `make test` does.
JUPYTER_BOOK := $(PY) tools/build_book.py
# torch's CPU-only build. On Linux x86-64 PyPI's torch wheel is the CUDA build (several GB of
# nvidia-* packages), so torch alone (--no-deps) comes from PyTorch's CPU index first. --retries 0:
# where that index cannot be reached but a local wheel cache has torch, pip moves on at once.
# macOS and Windows take PyPI's wheel, which is the CPU build there.
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_VERSION := $(shell sed -n 's/^torch==//p' requirements.txt)

.PHONY: help setup browser sandbox book test test-portability refresh bench rechecks data lock clean binder-check linkcheck pdf student autograder

help:
	@echo "make setup    create .venv with the pinned packages, the npm packages and bubblewrap (book and test do it first)"
	@echo "make book     set up .venv if needed, then build the HTML (every page executed) into _build/html;"
	@echo "              after a stopped or failed build, pages that finished are kept and only the rest run"
	@echo "make test     set up, build the book with -W, every page executed afresh, then run every test but"
	@echo "              the portability ones (each page's outputs against its reference, cell by cell; package,"
	@echo "              self-check and grader, Binder pins, style)"
	@echo "make test-portability  the book where else it runs: every page off the canonical numeric mode (native"
	@echo "              kernels, no AVX2), the built HTML in chromium (desktop, phone, from disk, print; after"
	@echo "              make book, and Debian's chromium installed if missing), the student edition built in a"
	@echo "              clone of its own, and the rehearsals of Gradescope (as root, bubblewrap failing as in"
	@echo "              Docker) and of CI's publication of the student edition: slow, so not in make test;"
	@echo "              CI runs it on every push, and .ci/run after make test"
	@echo "make browser  install Debian's chromium, colour emoji font and Poppler if missing (through sudo unless"
	@echo "              root; the targets that use chromium do it first)"
	@echo "make refresh  re-execute every page and rewrite the reference outputs in tests/references"
	@echo "make bench    time a clean build page by page and each starter, against the budgets (_build/bench.md)"
	@echo "make rechecks  the slow re-checks of chapters 3, 4 and 6 (longer patience, other splits and seeds:"
	@echo "              minutes, not seconds), written to the records the pages glue their numbers from"
	@echo "make binder-check  rehearse the Binder launch locally: binder/ built as repo2docker does, every page's"
	@echo "              reader notebook opened, judged against the built HTML and run in JupyterLab in chromium,"
	@echo "              then run again in a venv with only the package (_build/binder-check.md; not part of make test)"
	@echo "make student  write the student edition (no answers) to _build/student and build its HTML there"
	@echo "make autograder  write the instructor's Gradescope autograder to _build/autograder.zip"
	@echo "make data     regenerate the synthetic CloudWave data in data/"
	@echo "make lock     regenerate requirements.txt from requirements.in, and binder/requirements.txt from it"
	@echo "              (UPGRADE=1: indirect dependencies move to their newest releases too)"
	@echo "make pdf      print the built HTML to _build/pdf/book.pdf and by-hand.pdf (run make book first)"
	@echo "make linkcheck  check every external link of the book's pages (needs the network; run weekly by CI)"
	@echo "make clean    remove _build (keeps .venv)"

# tools/check_python.py: PYTHON must be 3.11, and a .venv made with another Python is removed
# (with a line saying so) and rebuilt, instead of failing later in pip with no hint.
$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) tools/check_python.py $(VENV)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	if [ "$$(uname -s)-$$(uname -m)" = Linux-x86_64 ]; then \
	  $(PY) -m pip install --quiet --disable-pip-version-check --retries 0 --no-deps \
	    --index-url $(TORCH_CPU_INDEX) "torch==$(TORCH_VERSION)+cpu"; fi
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

$(NPM_STAMP): package.json package-lock.json
	command -v npm >/dev/null || { $(APT_INSTALL) update && $(APT_INSTALL) install -y nodejs npm; }
	npm ci --no-audit --no-fund
	touch $@

setup: $(STAMP) $(NPM_STAMP) sandbox

# Debian's chromium for the browser tests, driven by Playwright (never `playwright install`), and
# Debian's colour emoji font, without which chromium draws the data's emoji as empty boxes.
EMOJI_FONT := /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf
# Poppler's pdfunite, pdfinfo, pdfimages and pdftotext: the print edition (tools/print_book.py) and its test.
browser:
	command -v chromium >/dev/null || { $(APT_INSTALL) update && $(APT_INSTALL) install -y chromium; }
	test -f $(EMOJI_FONT) || { $(APT_INSTALL) update && $(APT_INSTALL) install -y fonts-noto-color-emoji; }
	command -v pdfunite >/dev/null || { $(APT_INSTALL) update && $(APT_INSTALL) install -y poppler-utils; }

# Debian's bubblewrap: the self-check's workers run in it (code/transformer_lab/selfcheck/worker/isolation.py).
sandbox:
	command -v bwrap >/dev/null || [ "$$(uname -s)" != Linux ] || { $(APT_INSTALL) update && $(APT_INSTALL) install -y bubblewrap; }

book: setup
	$(JUPYTER_BOOK) book

# The build executes every page afresh (--fresh: nothing from `make book`'s cache) and saves each
# executed page in _build/executed/; the page tests compare those with tests/references/ (strict
# nbval, cell by cell: tests/built_pages.py) instead of executing every page a second time.
# --durations: the slowest tests close the run, for the speed budget (make bench measures it).
test: setup
	$(JUPYTER_BOOK) book --fresh
	$(PY) -m pytest -n auto --dist loadfile --durations=15

# The tests marked `portability` (tests/conftest.py), which `make test` leaves out: every page
# executed off the canonical numeric mode, natively and as on a CPU without AVX2, the built HTML in
# chromium (tests/browser/, the print edition), the student edition built in its own clone, and the
# rehearsals of the other places the book runs (Gradescope, CI's publication of the student
# edition). The browser tests read _build/html, so the book is built first as `make book` builds
# it (after `make book`, only the changed pages run again).
test-portability: browser setup
	$(JUPYTER_BOOK) book
	$(PY) -m pytest -n auto --dist loadfile --durations=15 --portability

refresh: setup
	$(PY) tools/book_pages.py refresh

data: setup
	$(PY) -m transformer_lab.cloudwave

bench: setup
	$(PY) tools/bench.py

# Not part of `make test` (it trains for minutes): run it after changing chapter 3's, 4's or
# 6's experiment, when their pages fail with "the re-check record ... is stale", and commit the records.
rechecks: setup
	$(PY) tools/rechecks.py

# A fresh temporary venv installs requirements.in; its `pip freeze --all` becomes the lock.
# Indirect dependencies keep their locked versions unless UPGRADE=1.
lock:
	$(PYTHON) tools/lock.py $(if $(UPGRADE),--upgrade)

# Not part of `make test` (its separate venv takes minutes to build): run on its own, and by CI as its own step.
binder-check: setup browser
	$(PY) tools/binder_check.py

# The print edition, from the HTML that `make book` built (it says so if there is none).
pdf: setup browser
	$(PY) tools/print_book.py

# Needs the network, so not part of `make test`: .github/workflows/weekly.yml runs it.
linkcheck: setup
	$(JUPYTER_BOOK) build . --builder linkcheck

# The two editions (tools/editions.py): the students' book without instructor/ and the answers'
# tests, with its own _toc.yml and HTML (built once more: as long as `make book`); the autograder zip.
student: setup
	$(PY) tools/editions.py student

autograder: setup
	$(PY) tools/editions.py autograder

clean:
	rm -rf _build
