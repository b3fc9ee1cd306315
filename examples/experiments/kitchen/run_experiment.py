"""Run the DPT-Agent paper's comparison on the real-time kitchen and report it as the paper
does: one team per agent, on one layout, with one partner, N runs each, then the table of
IQM (SE) per agent and the score-against-latency plot.

    python examples/experiments/kitchen/run_experiment.py --out runs/kitchen           # scripted
    python examples/experiments/kitchen/run_experiment.py --out runs/kitchen \\
        --model gpt-4o-mini --base-url https://your-endpoint/v1                          # hosted

Every run is one ``cogym-lab eval run`` (a subprocess, up to ``--parallel`` at once) of a team
file written under ``OUT/teams``: the agent's ready team (``cogym-lab teams``) with the chosen
partner, and ``[session] seed = <run number>``, so run *k* of every agent gets the same orders
(the runs differ from each other, the agents meet the same games). Results go to
``OUT/runs/<agent>/<model>/run-NN/``; running the script again resumes (finished sessions are
kept). Then ``cogym-lab eval report OUT/runs --out OUT/report`` prints the table and writes
``cooking.csv`` and ``score_latency.png``.

Without ``--model``, the agents' LM is the scripted stand-in of ``scripted_lm.py`` on a
loopback server whose replies take ``--scripted NAME=SECONDS`` each (default one model,
``scripted-2s``, at 2 s): give several to see how latency changes each agent's score.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TASK = "kitchen"
AGENTS = ["kitchen-act", "kitchen-react", "kitchen-reflexion", "kitchen-dpt-no-tom",
          "kitchen-dpt"]
DEFAULT_SCRIPTED = "scripted-2s=2.0"
#: The agent's role in the teams (chef 0); the partner keeps its ready team's role (chef 1).
AGENT_ROLE = "agent"


@dataclass(frozen=True)
class Run:
    """One game: an agent with a model, its run number, and where it goes."""

    agent: str
    model: str
    number: int
    team: Path
    out: Path


# -- team files ---------------------------------------------------------------------------------


def _toml(value: Any) -> str:
    """A TOML value: JSON's spelling of strings, numbers and lists is TOML's too."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}"
                                for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _table(header: str, values: dict[str, Any]) -> list[str]:
    return [f"[{header}]", *(f"{json.dumps(k)} = {_toml(v)}" for k, v in values.items()), ""]


def team_text(agent: str, partner: str | None, seed: int) -> str:
    """The team file of one run: ``agent``'s ready team, its partner replaced by ``partner``
    (a member type; ``"none"``: the agent alone; ``None``: the ready team's own), seeded."""
    from cogym_lab.teams import load_team

    ready = load_team(agent)
    members = dict(ready.members)
    kept = members.pop(AGENT_ROLE)
    others = list(members.items())
    partner_role, partner_member = others[0] if others else ("user", None)
    lines = [f"name = {json.dumps(ready.name)}",
             f"description = {json.dumps(ready.description)}",
             f"tasks = {_toml(ready.tasks or [TASK])}", ""]
    lines += _table("session", {**ready.session, "seed": seed})
    lines += _table(f"members.{AGENT_ROLE}", {"type": kept.type})
    for part in ("lm", "options"):
        if getattr(kept, part):
            lines += _table(f"members.{AGENT_ROLE}.{part}", getattr(kept, part))
    partner_type = partner if partner is not None else \
        (partner_member.type if partner_member is not None else "none")
    if partner_type != "none":
        lines += _table(f"members.{partner_role}", {"type": partner_type})
    return "\n".join(lines)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "model"


def plan_runs(out: Path, agents: Sequence[str], models: Sequence[str], runs: int,
              partner: str | None) -> list[Run]:
    """Every run of the experiment, its team file written."""
    planned = []
    for agent in agents:
        for number in range(runs):
            team = out / "teams" / agent / f"run-{number:02d}.toml"
            team.parent.mkdir(parents=True, exist_ok=True)
            team.write_text(team_text(agent, partner, number), encoding="utf-8")
            for model in models:
                planned.append(Run(agent, model, number, team,
                                   out / "runs" / agent / _safe(model) / f"run-{number:02d}"))
    return planned


# -- running ------------------------------------------------------------------------------------


def eval_run_command(run: Run, *, layout: str, ticks: int, tick_seconds: float,
                     base_url: str | None) -> list[str]:
    """The ``cogym-lab eval run`` of one game."""
    timeout = ticks * tick_seconds * 3 + 120  # the game, plus set-up and a slow machine
    command = [sys.executable, "-m", "cogym_lab", "eval", "run", "--task", TASK,
               "--team", str(run.team), "--instances", "0", "--concurrency", "1",
               "--env-arg", f"layout={layout}", "--env-arg", f"ticks={ticks}",
               "--env-arg", f"tick_seconds={tick_seconds}", "--timeout", str(timeout),
               "--out", str(run.out), "--no-progress", "--model", f"{AGENT_ROLE}={run.model}"]
    if base_url:
        command += ["--base-url", f"{AGENT_ROLE}={base_url}"]
    return command


def run_all(commands: Sequence[list[str]], parallel: int) -> list[str]:
    """Run the commands, ``parallel`` at a time; the failures' output."""
    def one(command: list[str]) -> str | None:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        said = " ".join(done.stdout.split()).partition(" Tokens:")[0]  # the counts line
        print(f"{command[command.index('--out') + 1]}: {said or 'no output'}", flush=True)
        return None if done.returncode == 0 else f"{' '.join(command)}\n{done.stderr}"

    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        return [failure for failure in pool.map(one, commands) if failure]


def scripted_models(values: Sequence[str]) -> dict[str, float]:
    models = {}
    for value in values:
        name, sep, seconds = value.partition("=")
        if not sep or not name.strip():
            raise SystemExit(f"--scripted takes NAME=SECONDS, not {value!r}")
        models[name.strip()] = float(seconds)
    return models


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the experiment's folder")
    parser.add_argument("--agents", nargs="+", default=AGENTS, metavar="TYPE",
                        help="agent member types, each with its ready team (default: the five "
                             "LM agents of the paper)")
    parser.add_argument("--partner", default=None, metavar="TYPE",
                        help="the partner's member type (kitchen-beef, kitchen-lettuce, "
                             "kitchen-assembler, kitchen-fsm) or 'none' for the agent alone "
                             "(default: the ready team's partner)")
    parser.add_argument("--layout", default="counter_circuit")
    parser.add_argument("--runs", type=int, default=20, help="runs per agent and model")
    parser.add_argument("--ticks", type=int, default=500, help="game length in ticks")
    parser.add_argument("--tick-seconds", type=float, default=0.25)
    parser.add_argument("--model", action="append", default=[], metavar="MODEL",
                        help="a hosted model for the agents (repeatable: every agent is run "
                             "with each)")
    parser.add_argument("--base-url", default=None, help="the hosted models' endpoint")
    parser.add_argument("--scripted", action="append", default=[], metavar="NAME=SECONDS",
                        help=f"a scripted model whose replies take SECONDS (repeatable; "
                             f"default {DEFAULT_SCRIPTED}); ignored with --model")
    parser.add_argument("--parallel", type=int, default=4, help="games at the same time")
    parser.add_argument("--no-report", action="store_true", help="run only, do not report")
    args = parser.parse_args(argv)

    scripted = {} if args.model else scripted_models(args.scripted or [DEFAULT_SCRIPTED])
    models = list(args.model) or list(scripted)
    runs = plan_runs(args.out, args.agents, models, args.runs, args.partner)
    server = None
    base_url = args.base_url
    if scripted:
        sys.path.insert(0, str(HERE))
        from scripted_lm import reply_to

        from cogym_lab.testing import ScriptedOpenAIServer

        server = ScriptedOpenAIServer(responder=reply_to, models=list(scripted),
                                      latency=scripted).start()
        base_url = server.base_url
    try:
        failures = run_all([eval_run_command(run, layout=args.layout, ticks=args.ticks,
                                             tick_seconds=args.tick_seconds,
                                             base_url=base_url) for run in runs],
                           max(1, args.parallel))
    finally:
        if server is not None:
            server.stop()
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    if not args.no_report:
        report = [sys.executable, "-m", "cogym_lab", "eval", "report", str(args.out / "runs"),
                  "--out", str(args.out / "report")]
        if subprocess.run(report, check=False).returncode != 0:
            return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
