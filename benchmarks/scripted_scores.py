"""The scores a batch of scripted sessions gets: the same runs, before and after a change.

Runs the autonomous and the collaborative team on a few real instances of each task with the
test suite's scripted LMs on a loopback server (as ``tests/eval/test_eval_runner.py`` does), reports
them with the scripted judges, and prints one row per task and team. Run it from a checkout's
root on two checkouts to compare their rules:

    COGYM_DATA=<shared datasets> python benchmarks/scripted_scores.py

It uses only APIs both older and newer checkouts have (the task tools read their LM from the
environment), and each checkout's own scripted LMs from its ``tests/support``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's tests/support

from cogym_lab.envs.related_work.search import BM25PaperIndex  # noqa: E402
from cogym_lab.eval import load_session, report, run  # noqa: E402
from cogym_lab.testing import ScriptedOpenAIServer  # noqa: E402
from tests.support.eval_scripts import (  # noqa: E402
    ReportJudgePlay,
    RouteByInstance,
    related_work_routes,
    tabular_routes,
    travel_routes,
)

INSTANCES = {"travel_planning": [0, 1, 2, 3], "related_work": [0, 1, 2],
             "tabular_analysis": [0, 1]}
PAPERS = 3000
COLUMNS = ["task", "team", "sessions", "delivered", "performance", "messages", "repeated",
           "user_task_actions", "user_env_act_ratio", "h_init", "user_lm_calls"]


def _mean(values: list[float]) -> float:
    clean = [v for v in values if not math.isnan(v)]
    return sum(clean) / len(clean) if clean else math.nan


def _session_facts(directory: Path) -> dict[str, float]:
    record = load_session(directory)
    messages = [(m.sender, m.text) for m in record.messages]
    usage = directory / "user" / "usage.json"  # exact counts, whatever the call log kept
    return {"messages": len(messages), "repeated": len(messages) - len(set(messages)),
            "user_lm_calls": json.loads(usage.read_text()).get("calls", 0)
            if usage.is_file() else 0}


def main() -> int:
    for name in ("OPENAI_API_KEY", "COGYM_MODEL", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        for task, instances in INSTANCES.items():
            env_args: dict = {}
            if task == "related_work":
                BM25PaperIndex.load_or_build(cache_dir=base / "index", limit=PAPERS,
                                             progress=False)
                env_args = {"index_limit": PAPERS, "index_cache": str(base / "index")}
                routes = related_work_routes(instances)
            elif task == "tabular_analysis":
                routes = tabular_routes(instances, base / "peek")
            else:
                routes = travel_routes(instances)
            idle = 20.0 if task == "tabular_analysis" else 2.0
            outs = {}
            with ScriptedOpenAIServer(responder=RouteByInstance(routes)) as server:
                os.environ["COGYM_MODEL"] = "tool-lm"
                os.environ["OPENAI_BASE_URL"] = server.base_url
                for team in ("autonomous", "collaborative"):
                    outs[team] = base / task / team
                    run(task, team, instances, out=outs[team], concurrency=8,
                        models={"agent": "agent-lm", "user": "user-lm"}, env_args=env_args,
                        idle_seconds=idle, timeout=240, progress=False)
            judge = ReportJudgePlay(RouteByInstance(routes))
            with ScriptedOpenAIServer(responder=judge) as server:
                result = report([outs["autonomous"], outs["collaborative"]],
                                baseline=outs["autonomous"], effort=False, failures=False,
                                judge={"model": "judge-lm", "base_url": server.base_url})
            os.environ.pop("COGYM_MODEL")
            os.environ.pop("OPENAI_BASE_URL")
            sessions = result.tables["sessions"]
            for team, out in outs.items():
                mine = sessions[sessions["agent_type"] == team]
                facts = [_session_facts(p) for p in sorted(out.iterdir()) if p.is_dir()]
                rows.append({
                    "task": task, "team": team, "sessions": len(mine),
                    "delivered": float(mine["delivered"].mean()),
                    "performance": _mean(mine["performance"].astype(float).tolist()),
                    "messages": _mean([f["messages"] for f in facts]),
                    "repeated": sum(f["repeated"] for f in facts),
                    "user_task_actions": float(mine["human_task_actions"].sum()),
                    "user_env_act_ratio": _mean(mine["user_env_act_ratio"].astype(float)
                                                .tolist()),
                    "h_init": _mean(mine["h_init"].astype(float).tolist()),
                    "user_lm_calls": _mean([f["user_lm_calls"] for f in facts])})
    widths = {c: max(len(c), 8) for c in COLUMNS}
    print("  ".join(c.rjust(widths[c]) for c in COLUMNS))
    for row in rows:
        cells = []
        for column in COLUMNS:
            value = row[column]
            text = f"{value:.3f}" if isinstance(value, float) else str(value)
            cells.append(text.rjust(widths[column]))
        print("  ".join(cells))
    print(json.dumps(rows), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
