"""Write the example notebooks of this folder from the cell texts below.

    python examples/build_examples.py

The notebooks are generated so they stay reproducible and free of outputs; edit them here, not
in JupyterLab. Each runs top to bottom: in JupyterLab (sessions run in the server, the panel is
live) or in any kernel (sessions run in the kernel).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP = """\
An agent needs a language model. Tell this notebook which one, after `%load_ext cogym_lab`:
the settings are sent with every session it starts, also to sessions that run in the Jupyter
server (whose environment a notebook cannot change):

```
%cogym config model=gpt-4o                                # the model name
%cogym config api_key                                     # for the OpenAI API: asks for the key
%cogym config base_url=http://localhost:11434/v1          # or another OpenAI-compatible server
```

`%cogym config` alone shows what is sent (the key masked); from Python it is
`cogym_lab.api.configure(model="gpt-4o")`. `COGYM_MODEL`, `OPENAI_API_KEY` and `OPENAI_BASE_URL`
set before starting JupyterLab, or in this kernel with `%env`, are sent too when `%cogym config`
does not set them. Without a model the panel still works for you, and the agent says in the chat
what to run."""

#: The evaluation notebook runs its batch in this kernel's own process (not in the server), so
#: the kernel's environment is what its LMs read, and `%env` is the way to set it.
SETUP_IN_KERNEL = """\
The agents, simulated users and judges need a language model. The batch runs in this kernel's
own process, so set the model in this kernel's environment (or before starting JupyterLab), for
the OpenAI API or any OpenAI-compatible server (vLLM, Ollama, llama.cpp):

```
%env COGYM_MODEL=gpt-4o                        # the model name
%env OPENAI_API_KEY=...                        # for the OpenAI API
%env OPENAI_BASE_URL=http://localhost:11434/v1 # or another server
```"""

YOUR_DATAFRAME = [
    ("markdown", """\
# Analyse your own DataFrame with an agent

You and an agent work on one analysis at the same time. The agent runs its code as cells in
**this notebook's kernel**, so it sees `df` and every variable you define, and you see every
variable it defines. Its cells appear in the notebook, marked as the agent's; when you run a
cell, the agent is told.

""" + SETUP),
    ("code", "%load_ext cogym_lab"),
    ("markdown", "Some data to work on: weekly sales of a few shops, with advertising spend and "
                 "price. Use your own DataFrame instead."),
    ("code", """\
import numpy as np
import pandas as pd

rng = np.random.default_rng(7)
weeks = 120
df = pd.DataFrame({
    "region": rng.choice(["north", "south", "east", "west"], weeks),
    "advertising": rng.uniform(0, 100, weeks).round(1),
    "price": rng.uniform(5, 15, weeks).round(2),
})
df["sales"] = (300 + 2.5 * df["advertising"] - 12 * df["price"]
               + rng.normal(0, 15, weeks)).round(1)
df.head()"""),
    ("markdown", """\
Start a session on your question. `--data df` hands over the DataFrame (a file path works too);
`--autonomy ask` would make the agent ask before it runs each cell. The panel below is the
workspace: chat, the agent's status, the notebook view and the shared findings editor."""),
    ("code", '%cogym new tabular_analysis --query "What drives weekly sales, and by how much?" '
             '--data df --autonomy free'),
    ("markdown", "Everything in the panel can also be done from code. The session's handle is in "
                 "`cogym_session`:"),
    ("code", """\
session = cogym_session
session.send("Please start with how sales relate to advertising and price.")
reply = await session.wait_for_reply(timeout=600)
print(f"{reply.sender}: {reply.text}")"""),
    ("code", """\
for cell in session.view["notebook"].content["cells"]:
    print(f"--- cell {cell['index']} by {cell['ran_by']}\\n{cell['source']}")
    for output in cell["outputs"]:
        print(">>>", output["text"])
print("\\nFindings so far:\\n", session.view["findings"].content or "(none yet)")"""),
    ("markdown", "When the findings are written, finish: the session ends and its results "
                 "(event log, scores) are saved. `session.end()` stops without finishing."),
    ("code", """\
session.end()
result = await session.wait(timeout=300)
print(result["end_reason"], "| results in", session.results_dir)"""),
]

TRAVEL = [
    ("markdown", """\
# Plan a trip with an agent

A Travel Planning task from the Co-Gym benchmark: you are the traveller, the agent searches
flights, places to stay and restaurants and writes the plan in a shared editor. You can edit the
plan yourself at any time; neither of you waits for the other.

""" + SETUP),
    ("code", "%load_ext cogym_lab"),
    ("markdown", "Start instance 3 of the task (`%cogym new travel_planning --help` lists the "
                 "options; `--team collaborative-planning` picks the agent that plans "
                 "first)."),
    ("code", "%cogym new travel_planning --instance 3"),
    ("markdown", "Chat in the panel, or from code. The handle of the session is in "
                 "`cogym_session`:"),
    ("code", """\
trip = cogym_session
trip.send("We are a small group on a budget; please keep the costs low.")
reply = await trip.wait_for_reply(timeout=600)
print(f"{reply.sender}: {reply.text}")"""),
    ("code", 'print(trip.view["plan"].content or "(the plan is still empty)")'),
    ("markdown", "When you are happy with the plan, finish. The plan is graded against the "
                 "task's constraints (the scores are also in `session.json`)."),
    ("code", """\
trip.finish()
result = await trip.wait(timeout=600)
result["scores"]"""),
]

RELATED_WORK = [
    ("markdown", """\
# Write a Related Work section with an agent

A Related Work task from the Co-Gym benchmark: you are the author; the agent searches papers,
builds a shared library and drafts the section in a shared editor. Add papers, edit the text or
ask for changes in the chat, whenever you like.

""" + SETUP),
    ("code", "%load_ext cogym_lab"),
    ("markdown", """\
The task reads its data (the tasks and the paper corpus) from your data folder: `%cogym data`
says what is there and where each missing file comes from. The paper search uses one index over
the whole corpus, built once and kept in your cache folder for every session and notebook:
`bash scripts/lab.sh` builds it before JupyterLab opens (`cogym-lab data prepare related_work`
does the same by hand); otherwise the first session builds it, a few minutes, with a progress bar
in its panel."""),
    ("code", "%cogym new related_work --instance 0"),
    ("code", """\
paper = cogym_session
reply = await paper.wait_for_reply(timeout=600)
print(f"{reply.sender}: {reply.text}")"""),
    ("code", """\
view = paper.view
for entry in view["library"].content:
    print(entry)
print(view["editor"].content)"""),
    ("markdown", "Finish to have the section graded (an LM judge scores it against the "
                 "author's hidden requirements)."),
    ("code", """\
paper.finish()
result = await paper.wait(timeout=600)
result["scores"]"""),
]

WATCH = [
    ("markdown", """\
# Watch an agent and a simulated user collaborate

A benchmark run as in the Co-Gym paper: an LM agent and an LM that plays the user (it knows
preferences the agent does not) work on a Travel Planning instance, with no one at the keyboard.
You watch them in the session panel, live and read-only; then the transcript and the scores.

""" + SETUP),
    ("code", "import cogym_lab"),
    ("markdown", """\
`role=None` takes no seat; the `collaborative` team is an agent plus a simulated user
(`cogym-lab teams` lists the others).

Showing `run` shows the session panel in watch mode: it follows the simulated user's view (the
chat and the shared workspace, as a person in that seat would see them) and the agent's status,
live, while the two work. It is read-only: its header says "Watching user (read-only)" and its
controls are disabled. `run.watch("agent")` shows the agent's view instead."""),
    ("code", """\
run = cogym_lab.new_session("travel_planning", instance=0, team="collaborative", role=None)
run"""),
    ("markdown", "Once the session ends, the transcript tells the whole run in plain "
                 "sentences, one line per event."),
    ("code", """\
result = await run.wait(timeout=1800)
print(run.transcript())"""),
    ("code", """\
for message in run.chat:
    print(f"[{message.sender}] {message.text}")"""),
    ("code", """\
print("ended:", result["end_reason"], "| delivered:", result["delivered"])
result["scores"]"""),
    ("markdown", "The results folder holds `session.json`, the event log `events.jsonl` and "
                 "each member's LM calls: `cogym-lab replay` rebuilds any moment of the run."),
    ("code", "print(run.results_dir)"),
]

EVALUATION = [
    ("markdown", """\
# Evaluate collaborative agents: a batch run and a report

The Co-Gym evaluation in small: the Fully Autonomous Agent and the Collaborative Agent with a
simulated user each run the same Travel Planning instances, then one report compares them on
outcome (delivery, task performance, win rate) and process (initiative entropy, controlled
autonomy, effort scaling). Every figure comes from the sessions' results folders alone, so the
same report reads sessions people ran in the panels.

""" + SETUP_IN_KERNEL + """

The judge LMs of the report use the same model."""),
    ("code", """\
import os
from pathlib import Path

import cogym_lab.eval as cogym_eval"""),
    ("markdown", "Two instances keep the demo short; `\"0:102\"` is the whole benchmark. "
                 "Sessions run concurrently, and running again skips those already finished. "
                 "`allow_sample=True` lets the demo run on the small sample of Travel Planning "
                 "that comes with cogym_lab when the full data is not downloaded (`%cogym data "
                 "download travel_planning` fetches it); the report then says its numbers are "
                 "not comparable with the papers'. Leave it out of runs you mean to compare "
                 "with the paper: they then refuse to start on the sample."),
    ("code", """\
instances = "0:2"
runs = {team: cogym_eval.run("travel_planning", team, instances,
                             out=f"cogym-results/eval-runs/{team}", concurrency=4,
                             allow_sample=True)
        for team in ("autonomous", "collaborative")}
for team, summary in runs.items():
    counts = summary.counts
    print(f"{team}: {counts.finished} finished, {counts.delivered} delivered, "
          f"{counts.failed} failed")"""),
    ("markdown", "The report renders here as tables and plots; `out=` also saves its CSV and "
                 "PNG files."),
    ("code", """\
report = cogym_eval.report([runs["collaborative"].out, runs["autonomous"].out],
                           baseline=runs["autonomous"].out,
                           judge=os.environ.get("COGYM_MODEL"), out="cogym-results/eval-report")
report"""),
    ("code", "print(report.to_text())"),
    ("markdown", "Any one session, as a readable trajectory:"),
    ("code", """\
first = sorted(Path(runs["collaborative"].out).glob("*/session.json"))[0].parent
print(cogym_eval.show(first))"""),
]

INTERACTIVE_PLANS = [
    ("markdown", """\
# Plan a Related Work section with an agent, step by step

An *interactive plan* (from Cocoa: Feng et al., "Cocoa: Co-Planning and Co-Execution with AI
Agents") is a shared, editable list of steps that you and the agent make together and then carry
out together, like the cells of a notebook. Each step is the agent's or yours. The agent proposes
plans; you pick one, give yourself the steps that need your judgement, and run it. The panel
shows the plan with a play button per step, *Run all* and *Run remaining*, and a side area to
complete your steps and curate what the agent's steps produced. This notebook does the same from
Python. `docs/plans.md` describes plans in full.

""" + SETUP),
    ("code", "%load_ext cogym_lab"),
    ("markdown", """\
The `collaborative-plans` team pairs the plan-aware agent with your seat; the task gets a plan.
It searches the same paper index as the Related Work notebook (built once, see there)."""),
    ("code", "%cogym new related_work --instance 0 --team collaborative-plans"),
    ("markdown", "The agent proposes a plan first. Each step says whose it is."),
    ("code", """\
paper = cogym_session
plan = await paper.wait_for_plan(lambda plan: plan["proposals"], timeout=600)
for number, proposal in enumerate(plan["proposals"]):
    print(f"{number}: {proposal['title']}")
    for step in proposal["steps"]:
        print(f"   {step['id']} ({step['assignee']}): {step['description']}")"""),
    ("markdown", """\
Pick the first plan, take the step that chooses the papers (which papers matter is yours to
judge), and run the plan: the agent does its steps and the run stops at yours."""),
    ("code", """\
paper.act({"name": "SELECT_PLAN", "args": {"index": 0}})
plan = await paper.wait_for_plan(lambda plan: plan["plan"] is not None)
choose = plan["plan"]["steps"][1]["id"]
paper.act({"name": "ASSIGN_STEP", "args": {"step": choose, "assignee": "person"}})
paper.act({"name": "RUN_ALL", "args": {}})
plan = await paper.wait_for_plan(
    lambda plan: any(s["status"] == "needs_input" for s in plan["plan"]["steps"]))
found = plan["context"][-1]["items"]
for item in found:
    print(item["id"], "-", item["title"])"""),
    ("markdown", "Keep two of the papers the search found: complete your step with them. "
                 "The agent carries on from what you kept."),
    ("code", """\
paper.act({"name": "COMPLETE_STEP",
           "args": {"step": choose, "text": "These two matter most.", "items": found[:2]}})
plan = await paper.wait_for_plan(lambda plan: plan["output"], timeout=600)
for step in plan["plan"]["steps"]:
    print(f"{step['id']} {step['status']:>5} by {step['completed_by']}: {step['description']}")
print(paper.view["editor"].content)"""),
    ("markdown", "Finish to have the section graded."),
    ("code", """\
paper.finish()
result = await paper.wait(timeout=600)
result["scores"]"""),
]

KITCHEN = [
    ("markdown", """\
# Cook with an agent in real time

A real-time task from DPT-Agent (Zhang et al., "Leveraging Dual Process Theory in Language Agent
Framework for Real-time Simultaneous Human-AI Collaboration"): two chefs share a kitchen and
serve burger orders against the clock. The world moves on every tick (a quarter of a second)
whether anyone acts or not, so the agent has to be quick as well as right. You play one chef
from the panel; the agent plays the other.

The `kitchen-fsm` team's agent is a finite-state machine: it needs no language model. The LM
agents of the paper are teams too (`kitchen-act`, `kitchen-react`, `kitchen-reflexion`,
`kitchen-dpt`, `kitchen-dpt-no-tom`); they need a model, set as in the other notebooks
(`%cogym config model=...`)."""),
    ("code", "import cogym_lab"),
    ("markdown", """\
Start a one-minute game (240 ticks of 0.25 s) in the seat `user`. The clock waits for you: it
starts when you press **▶ Start the game** above the kitchen (or play a key, or act from code
as below). The panel draws the kitchen on every tick. **Click the kitchen** to play: the arrow
keys move your chef (the orange one, marked "you"), Space interacts with what it faces (pick
up, put down, chop, serve), and the buttons below run whole jobs (Prepare, Assemble, Serve,
Pass on, Put out fire). While the kitchen has the focus your keys are the game's; **Escape**
gives them back to the notebook.

Beef cooks in a pan (take it out before it burns), lettuce is chopped on a board, and a
burger is bread plus its fillings on one plate. Orders run out: a missed order costs points."""),
    ("code", """\
game = cogym_lab.new_session("kitchen", team="kitchen-fsm",
                             env_args={"ticks": 240, "tick_seconds": 0.25})
game"""),
    ("markdown", """\
Everything the panel does, code can do too: a macro action from your seat is the same as its
button. Here your chef sets out bread on a plate for the agent."""),
    ("code", 'game.act({"name": "PREPARE", "args": {"food": "Bread", "plate": True}})'),
    ("markdown", "When the time is up, the game's result: the score, the orders served, missed "
                 "or served wrong, and each chef's share of the work on the dishes served."),
    ("code", """\
await game.wait(timeout=600)
kitchen = game.view["kitchen"].content
result = kitchen["result"]
print(f"score {result['score']}: served {result['served']}, missed {result['missed']}, "
      f"wrong {result['wrong']}")
for role, share in result["contribution"].items():
    print(f"{role}: {share:.0%} of the key steps")"""),
    ("markdown", """\
The paper's measures come from the session's results folder alone (its event log holds one
`clock` event per tick, saying what happened): score efficiency, contribution rates, missed and
wrong-served orders, how busy each chef was. `cogym_lab.eval` reports them over many games."""),
    ("code", """\
from cogym_lab.eval.metrics.kitchen_measures import cooking_measures
from cogym_lab.records.trajectory import load_session

measures = cooking_measures(load_session(game.results_dir))
for name in ("ticks", "score", "served", "missed", "wrong_served", "agent_contribution",
             "partner_contribution", "agent_occupancy", "partner_occupancy"):
    print(f"{name}: {measures.row()[name]}")"""),
]

ANALYSE_A_STUDY = [
    ("markdown", """\
# Analyse a study

A study walks participants through conditions (here: two agents on the built-in packing-list
task), asks them questions after each session and at the end, and writes one export: four
tables (`participants.csv`, `sessions.csv`, `answers.csv`, `events.csv`) and `study.json`. People
on JupyterHub and simulated participants write exactly the same export, so one analysis serves
both, and the two arms can be set side by side.

This notebook needs no language model: `--scripted` puts the todo task's rule-based user in the
person's seat and answers the questionnaires from how each session went. It runs in well under
a minute. The commands are the CLI's (`cogym-lab study ...`), run from Python here; see
`docs/studies.md` for every option."""),
    ("code", """\
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

work = Path("cogym-results") / "study-demo"
work.mkdir(parents=True, exist_ok=True)


def cogym(*args):
    # `cogym-lab ARGS`, with this kernel's Python; prints what it printed
    done = subprocess.run([sys.executable, "-m", "cogym_lab", *map(str, args)],
                          capture_output=True, text=True)
    print(re.sub(r"\\x1b\\[[0-9;]*m", "", done.stdout + done.stderr))  # no colour codes
    done.check_returncode()"""),
    ("markdown", """\
A small design, written here: two conditions within subjects in a Latin-square order, a rating
and a task-load form after each session, a ranking at the end. `measures` names what the
analysis reports and how it tests: Wilcoxon signed-rank between the conditions, and Cocoa's
plans-vs-chat measures (the share of time per activity, the output-to-input item ratio)."""),
    ("code", """\
design_text = '''
name = "todo-demo"
title = "Two agents on a packing list"
consent = "You agree to take part."
instructions = "Write a packing list with the agent."
measures = ["wilcoxon", "likert", "time_shares", "item_ratio"]

[assignment]
subjects = "within"
order = "latin"

[[conditions]]
name = "first"
label = "Agent A"
session = { task = "todo", team = "example", instances = [0] }

[[conditions]]
name = "second"
label = "Agent B"
session = { task = "todo", team = "example", instances = [1] }

[[questionnaires]]
name = "after"
after = "session"
items = [
  { kind = "likert", name = "satisfied", text = "I was satisfied with the result." },
  { kind = "task_load", name = "task_load" },
]

[[questionnaires]]
name = "final"
after = "end"
items = [{ kind = "ranking", name = "rank", text = "Rank the agents, best first." }]
'''
design = work / "design.toml"
design.write_text(design_text)
cogym("study", "check", design)"""),
    ("markdown", "Six simulated participants walk the design (run it again with the same "
                 "`--out` and it resumes)."),
    ("code", """\
simulated = work / "simulated"
cogym("study", "simulate", design, "--participants", 6, "--out", simulated, "--scripted",
      "--no-progress")"""),
    ("markdown", """\
The export is plain CSV: load it with pandas. One row per session, with what was counted from
its log, among them the plans-vs-chat codes: `share_planning`, `share_executing`,
`share_inspecting`, `share_waiting`, `share_other` (shares of the session's time) and
`item_ratio` (each round's ratio in `item_ratios`). With a rule-based user a session lasts
milliseconds, so these shares say little here; with people they are Cocoa's Figure 12."""),
    ("code", """\
sessions = pd.read_csv(simulated / "sessions.csv")
shares = ["share_planning", "share_executing", "share_inspecting", "share_waiting",
          "share_other"]
sessions[["participant", "position", "label", "performance", "person_messages",
          *shares, "item_ratio"]].round(3)"""),
    ("markdown", "`study analyse` computes every measure the design asks for and compares the "
                 "conditions; it writes `analysis.md`, `analysis.csv` and the plots into the "
                 "export folder."),
    ("code", """\
cogym("study", "analyse", simulated, "--design", design)
analysis = pd.read_csv(simulated / "analysis.csv")
analysis[analysis.section.isin(["sessions", "likert", "borda", "item_ratio"])][
    ["section", "measure", "item", "label", "n", "value", "median", "mean", "sd"]]"""),
    ("markdown", "The conditions compared, with the test the design asked for and the "
                 "Bonferroni-corrected p in each family (ratings, outcomes, time shares; the "
                 "item ratio by Mann-Whitney U over every round, as Cocoa)."),
    ("code", """\
tests = analysis[analysis.section == "tests"]
tests[["family", "item", "label", "label_b", "n", "value", "value_b", "test", "statistic",
       "p_value", "p_bonferroni", "note"]]"""),
    ("markdown", "Two plots: the mean share of time per activity, per condition, from the "
                 "table above; and the plot `study analyse` drew of the ratings."),
    ("code", """\
time = analysis[analysis.section == "time_shares"].pivot(index="label", columns="measure",
                                                        values="mean")[shares]
axis = time.plot.barh(stacked=True, figsize=(7, 2.5), xlim=(0, 1))
axis.set_xlabel("mean share of session time")
axis.legend(loc="upper left", bbox_to_anchor=(1, 1))
print(sorted(p.name for p in simulated.glob("*.png")))"""),
    ("code", """\
from IPython.display import Image

Image(filename=str(simulated / "likert.png"), width=600)"""),
    ("markdown", """\
## Two arms compared

A real study has a **human arm** (people on JupyterHub) besides the simulated one. This notebook
has no people, so **a second simulated run stands in for the human arm**: the same design, but
its simulated users are *sceptical* (they turn down the agent's first request) and *confused*
(they first ask what is going on). Its export is marked as the human arm in `study.json` only
so that `study compare` accepts it: never do this with a real export. The fidelity table below
is therefore about two simulators, not about how people differ from simulated users."""),
    ("code", """\
traits = '\\nsimulated_traits = ["sceptical", "confused"]'
stand_in_design = work / "design-stand-in.toml"
stand_in_design.write_text(design_text.replace("[0] }", "[0] }" + traits)
                           .replace("[1] }", "[1] }" + traits))
stand_in = work / "stand-in-human"
cogym("study", "simulate", stand_in_design, "--participants", 6, "--out", stand_in,
      "--scripted", "--no-progress")
meta = json.loads((stand_in / "study.json").read_text())
meta["arm"] = "human"  # a stand-in, marked so in this notebook only
(stand_in / "study.json").write_text(json.dumps(meta, indent=2))"""),
    ("code", """\
cogym("study", "compare", stand_in, simulated, "--design", design, "--out", work / "compare")
compared = pd.read_csv(work / "compare" / "compare.csv")
compared[compared.table == "fidelity"][["figure", "label", "human", "simulated", "difference",
                                        "too_cooperative"]]"""),
]

NOTEBOOKS = {
    "01_your_dataframe.ipynb": YOUR_DATAFRAME,
    "02_travel_planning.ipynb": TRAVEL,
    "03_related_work.ipynb": RELATED_WORK,
    "04_watch_agent_and_simulated_user.ipynb": WATCH,
    "05_evaluation_demo.ipynb": EVALUATION,
    "06_interactive_plans.ipynb": INTERACTIVE_PLANS,
    "07_real_time_kitchen.ipynb": KITCHEN,
    "08_analyse_a_study.ipynb": ANALYSE_A_STUDY,
}


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    notebook = new_notebook(cells=[new_markdown_cell(text) if kind == "markdown"
                                   else new_code_cell(text) for kind, text in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index:02d}"  # stable ids: rebuilding changes nothing
    return notebook


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        notebook = build(cells)
        nbformat.validate(notebook)
        nbformat.write(notebook, HERE / name)
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
