"""The package's build (pyproject.toml declares it): one step more than setuptools' default.

The explorers' script is the HTML book's file, ``_ext/static/explorers.js``; the package's widget
(``transformer_lab.explorers``) runs the same script in a notebook. An editable install (``make
setup``, Binder) reads it from the clone; a wheel (``pip install`` of the repository's archive,
as a downloaded notebook's first cell says) gets a copy of it here, beside the package's modules.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SCRIPT = Path(__file__).resolve().parent / "_ext" / "static" / "explorers.js"


class BuildWithExplorersScript(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # the package reads the clone's file
        if not SCRIPT.is_file():
            raise FileNotFoundError(f"the explorers' script {SCRIPT} is missing")
        self.copy_file(
            str(SCRIPT), str(Path(self.build_lib) / "transformer_lab" / SCRIPT.name)
        )


setup(cmdclass={"build_py": BuildWithExplorersScript})
