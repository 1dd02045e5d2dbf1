"""The Binder environment (binder/) matches the book's own: same Python, same pins, CPU-only torch.

Binder builds binder/ with repo2docker, which cannot be run here (no network beyond the package
registries), so these tests check the files it reads: runtime.txt, requirements.txt, postBuild.
The launch links themselves are checked on the built pages (tests/browser/test_browser_links.py),
and the launch is rehearsed end to end, outside `make test`, by `make binder-check`.
"""

from __future__ import annotations

import os
import re

from book_pages import ROOT

BINDER = ROOT / "binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Packages only Binder needs, each with why.
BINDER_ONLY = {
    # MyST markdown (admonitions, dropdowns, maths) drawn in JupyterLab's notebook cells.
    "jupyterlab-myst": "MyST in notebook cells",
    # The Jupyter front end. repo2docker's image already has one (JupyterLab 4.4.9, notebook 7.4.7),
    # but jupytext's JupyterLab extension at the main lock's jupytext fails to load on it, and the
    # pages would open as plain text; these pin the front end it loads on (`make binder-check`).
    "jupyterlab": "front end for jupytext's extension",
    "notebook": "must match jupyterlab (notebook 7.4 requires jupyterlab < 4.5)",
    "jupyter-server": "required by that jupyterlab (the image has 2.17.0)",
    "jupyterlab-server": "required by that jupyterlab (the image has 2.27.3)",
    "jupyter-builder": "required by that jupyterlab (not in the image)",
}


def normalise(name: str) -> str:
    """PEP 503 name: lower case, runs of -_. as one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path) -> tuple[dict[str, str], list[str]]:
    """``{name: version}`` of the ``name==version`` lines, and the option lines (``--…``)."""
    found: dict[str, str] = {}
    options: list[str] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            options.append(line)
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", line)
        assert match, (
            f"{path.relative_to(ROOT)}:{number}: {line!r} is not an exact pin NAME==VERSION"
        )
        name = normalise(match.group(1))
        assert name not in found, f"{path.relative_to(ROOT)} pins {name} twice"
        found[name] = match.group(2)
    return found, options


def test_binder_uses_python_3_11():
    assert (BINDER / "runtime.txt").read_text(encoding="utf-8").strip() == "python-3.11"


def test_binder_installs_cpu_only_torch_at_the_main_version():
    main, _ = pins(ROOT / "requirements.txt")
    binder, options = pins(BINDER / "requirements.txt")
    assert binder.get("torch") == f"{main['torch']}+cpu", (
        f"binder/requirements.txt should pin torch=={main['torch']}+cpu (the main lock's version, CPU "
        f"build), not {binder.get('torch')!r}"
    )
    assert options == [f"--extra-index-url {CPU_INDEX}"], (
        f"binder/requirements.txt options should be exactly the CPU index line, got {options}"
    )


def test_binder_pins_equal_the_main_lock():
    main, _ = pins(ROOT / "requirements.txt")
    binder, _ = pins(BINDER / "requirements.txt")
    binder_public = {name: version.split("+")[0] for name, version in binder.items()}
    missing = sorted(set(main) - set(binder))
    differ = sorted(
        f"{name}: main {main[name]}, binder {binder[name]}"
        for name in set(main) & set(binder)
        if binder_public[name] != main[name]
    )
    extra = sorted(set(binder) - set(main) - set(BINDER_ONLY))
    assert not missing, f"in requirements.txt but not in binder/requirements.txt: {missing}"
    assert not differ, (
        f"binder/requirements.txt pins differ from requirements.txt: {differ}"
    )
    assert not extra, f"binder-only pins not declared in BINDER_ONLY: {extra}"
    local_labels = sorted(name for name, version in binder.items() if "+" in version)
    assert local_labels == ["torch"], (
        f"only torch may carry a local version label: {local_labels}"
    )


def test_binder_has_jupytext_and_jupyterlab_myst():
    binder, _ = pins(BINDER / "requirements.txt")
    assert "jupytext" in binder and "jupyterlab-myst" in binder


def test_binder_pins_the_front_end_jupytext_loads_on():
    """Without a pinned JupyterLab, Binder's image decides it, and jupytext's extension may not load."""
    binder, _ = pins(BINDER / "requirements.txt")
    missing = sorted(set(BINDER_ONLY) - set(binder))
    assert not missing, (
        f"binder/requirements.txt should pin {missing} (see BINDER_ONLY for why)"
    )


def test_postbuild_installs_the_package_and_opens_md_as_notebooks():
    post_build = BINDER / "postBuild"
    assert os.access(post_build, os.X_OK), "binder/postBuild must be executable (chmod +x)"
    text = post_build.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash\n"), (
        "binder/postBuild must start with a bash shebang"
    )
    commands = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert "set -euo pipefail" in commands, (
        "postBuild must stop at the first failing command"
    )
    assert any(re.search(r"pip install .*--no-deps.* -e \.$", line) for line in commands), (
        "postBuild must install the book's package with `pip install --no-deps ... -e .`"
    )
    viewer = [
        line for line in commands if line.startswith("jupytext-config set-default-viewer")
    ]
    assert viewer and {"markdown", "myst"} <= set(viewer[0].split()[2:]), (
        "postBuild must make jupytext JupyterLab's default viewer for markdown and myst"
    )


def test_postbuild_writes_the_reader_notebooks_the_launch_links_open():
    """The rocket opens notebooks/<page>.ipynb (tools/reader_notebooks.py): postBuild writes them."""
    commands = [
        line.strip()
        for line in (BINDER / "postBuild").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    writes = [
        line
        for line in commands
        if line.startswith("python tools/reader_notebooks.py write")
    ]
    assert writes == ["python tools/reader_notebooks.py write --links notebook"], (
        "postBuild must write the reader notebooks with links between the notebooks"
    )
    assert commands.index(writes[0]) > next(
        i for i, line in enumerate(commands) if "pip install" in line
    ), "the reader notebooks are written after the package is installed"


def test_start_writes_the_notebooks_for_the_repository_binder_launched():
    """postBuild cannot know the repository; the launched session can (BinderHub's variables)."""
    start = BINDER / "start"
    assert os.access(start, os.X_OK), "binder/start must be executable (chmod +x)"
    text = start.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash\n")
    commands = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert commands[-1] == 'exec "$@"', "binder/start must end by starting the server"
    assert any("BINDER_REPO_URL" in line for line in commands)
    assert any(
        line.startswith("python tools/reader_notebooks.py write --links notebook")
        for line in commands
    )
