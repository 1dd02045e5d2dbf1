"""``python -m transformer_lab.selfcheck``: see :mod:`transformer_lab.selfcheck.grading.cli`."""

import atexit
import os
import sys

from transformer_lab.selfcheck.grading.cli import main

status = main()
# Exit at once: the clean-up registered with atexit (the workers' temporary folders) runs, the
# interpreter's own teardown of torch (about a second, more on a loaded machine) does not, so
# that Ctrl-C ends `grade` within a moment of the results being written.
sys.stdout.flush()
sys.stderr.flush()
atexit._run_exitfuncs()
os._exit(status)
