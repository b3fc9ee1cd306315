#!/usr/bin/env bash
# One command to try cogym_lab: install it (with JupyterLab) into a virtual environment of its
# own and open JupyterLab on the example notebooks. Extra arguments go to `jupyter lab`
# (e.g. `bash scripts/lab.sh --port 8899`).
#
# The environment is .venv-lab (set COGYM_LAB_VENV to use another). It is a regular, not an
# editable, install: that is what enables the cogym_lab server extension in Jupyter's config.
# Each phase is announced, and says how long it took: the first launch takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${COGYM_LAB_VENV:-.venv-lab}"
phase_started=$SECONDS

# "12 s" or "3 min 05 s"
took() {
  local seconds=$((SECONDS - phase_started))
  if [ "$seconds" -lt 60 ]; then echo "${seconds} s"
  else printf '%d min %02d s\n' $((seconds / 60)) $((seconds % 60)); fi
}
phase() {
  phase_started=$SECONDS
  echo "[$1/4] $2"
}
done_phase() {
  echo "      done in $(took)${1:+ ($1)}"
}

if [ -x "$venv/bin/python" ]; then
  phase 1 "Using the environment $venv (already there)…"
  done_phase
else
  phase 1 "Creating the environment $venv…"
  python3 -m venv "$venv"
  done_phase
fi
venv_bin="$(cd "$venv/bin" && pwd)"

phase 2 "Installing cogym_lab and JupyterLab (a few minutes the first time)…"
"$venv_bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
# Not --quiet: pip's own lines and download bars show what the minutes go to.
"$venv_bin/python" -m pip install --disable-pip-version-check '.[lab]'
done_phase

# Every session and example notebook opens the same index (the whole corpus, in the user
# cache): build it once, now, with its progress, instead of in the first session.
phase 3 "Checking the task data and building the paper search index (once per corpus version)…"
if "$venv_bin/cogym-lab" data prepare related_work --no-coverage; then
  done_phase
else
  done_phase "the index was not built; the Related Work task builds it on first use"
fi
echo "      Data: without a data directory, the examples read the small samples that come with"
echo "      cogym_lab; \`cogym-lab data download TASK\` (or \`%cogym data download TASK\` in a"
echo "      notebook) fetches a task's full data, and \`cogym-lab data\` says what is where."

phase 4 "Starting JupyterLab on examples/…"
if [ -z "${COGYM_MODEL:-}" ]; then
  echo "      No LM is set: the panels work, and the agent will say in the chat what to set."
  echo "      For an agent, set COGYM_MODEL (and OPENAI_API_KEY, or OPENAI_BASE_URL for another"
  echo "      OpenAI-compatible server) before running this script, or use %cogym config."
fi
# The server and its kernels find this environment's commands first (`!cogym-lab ...` in a cell).
export PATH="$venv_bin:$PATH"
extra=()
[ "$(id -u)" -ne 0 ] || extra+=(--allow-root)  # containers and CI machines often run as root
exec "$venv_bin/jupyter" lab examples/ "${extra[@]}" "$@"
