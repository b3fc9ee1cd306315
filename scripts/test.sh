#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run the whole suite.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k protocol`).
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the tests start themselves (they never expect a running service).
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# The browser tests drive Debian's Chromium through Playwright (never a downloaded browser).
[ -x /usr/bin/chromium ] || missing+=(chromium)
# The panel's module is checked by node and TypeScript.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "Installing from Debian's packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# A project-local virtual environment, so the suite never depends on what else is installed.
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test,local]'

# TypeScript checks the panel's JSDoc types (tests/widgets/test_panel_js_checks.py): a project-local copy.
[ -x .cache/typescript/node_modules/.bin/tsc ] || \
  npm install --silent --no-audit --no-fund --prefix .cache/typescript typescript@5

# configurable-http-proxy for the real JupyterHub of the study test
# (tests/browser/test_study_on_jupyterhub.py): a project-local copy.
[ -x .cache/configurable-http-proxy/node_modules/.bin/configurable-http-proxy ] || \
  npm install --silent --no-audit --no-fund --prefix .cache/configurable-http-proxy configurable-http-proxy@4

# Lint and type checks over the package (rules and settings in pyproject.toml): any finding
# fails the run before a test starts.
.venv/bin/python -m ruff check cogym_lab
.venv/bin/python -m mypy

exec .venv/bin/python -m pytest "$@"
