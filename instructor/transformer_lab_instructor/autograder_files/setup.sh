#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image (Ubuntu, as root), from
# /autograder/source: Python 3.11, bubblewrap for the workers' sandbox, and the pinned packages
# in a venv there. The book's package is not installed: run_autograder imports it from source/.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y software-properties-common bubblewrap
if ! command -v python3.11 >/dev/null; then
  add-apt-repository -y ppa:deadsnakes/ppa
  apt-get update
fi
apt-get install -y python3.11 python3.11-venv
python3.11 -m venv .venv
TORCH_VERSION="$(sed -n 's/^torch==//p' requirements.txt)"
.venv/bin/python -m pip install --quiet --no-deps \
  --index-url https://download.pytorch.org/whl/cpu "torch==${TORCH_VERSION}+cpu"
.venv/bin/python -m pip install --quiet -r requirements.txt
