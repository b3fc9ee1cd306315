#!/usr/bin/env bash
# One command to try cogym_lab: install it (with JupyterLab) into a virtual environment of its
# own and open JupyterLab on the example notebooks. Extra arguments go to `jupyter lab`
# (e.g. `bash scripts/lab.sh --port 8899`).
#
# The environment is .venv-lab (set COGYM_LAB_VENV to use another). It is a regular, not an
# editable, install: that is what enables the cogym_lab server extension in Jupyter's config.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${COGYM_LAB_VENV:-.venv-lab}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check '.[lab]'

if [ -z "${COGYM_MODEL:-}" ]; then
  echo "No LM is set: the panels work, and the agent will say in the chat what to set."
  echo "For an agent, set COGYM_MODEL (and OPENAI_API_KEY, or OPENAI_BASE_URL for another"
  echo "OpenAI-compatible server) before running this script."
fi
# Build the paper search index now (about a minute, once per corpus version), so no session
# waits for it; with the task data missing, it says what is missing and how to get it.
"$venv/bin/cogym-lab" data --prepare --no-coverage --task related_work \
  || echo "The paper index was not built; the Related Work task builds it on first use."
extra=()
[ "$(id -u)" -ne 0 ] || extra+=(--allow-root)  # containers and CI machines often run as root
exec "$venv/bin/jupyter" lab examples/ "${extra[@]}" "$@"
