#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image (Ubuntu, as root), from
# /autograder/source: Python 3.11 and the pinned packages in a venv every user may read
# (/opt/selfcheck-venv: the student's code runs there as the unprivileged user `selfcheck`,
# made here), and a course secret for the hidden inputs' seeds (kept if the zip has one).
# bubblewrap is installed for graders outside Docker; in Gradescope's container it cannot make
# namespaces, and the self-check uses the unprivileged user instead. The book's package is not
# installed: run_autograder imports it from source/, which only root can read.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y software-properties-common bubblewrap util-linux
if ! command -v python3.11 >/dev/null; then
  add-apt-repository -y ppa:deadsnakes/ppa
  apt-get update
fi
apt-get install -y python3.11 python3.11-venv
id selfcheck >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin selfcheck
VENV=/opt/selfcheck-venv
python3.11 -m venv "$VENV"
TORCH_VERSION="$(sed -n 's/^torch==//p' requirements.txt)"
"$VENV/bin/python" -m pip install --quiet --no-deps \
  --index-url https://download.pytorch.org/whl/cpu "torch==${TORCH_VERSION}+cpu"
"$VENV/bin/python" -m pip install --quiet -r requirements.txt
chmod -R a+rX "$VENV"
[ -f course_secret ] || head -c 32 /dev/urandom | base64 > course_secret
chmod 600 course_secret
