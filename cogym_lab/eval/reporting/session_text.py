"""A readable trajectory of one finished session, for the terminal or a notebook.

The event lines come from the same renderer as the live ``cogym-lab run`` view
(:class:`cogym_lab.nodes.transcript.Transcript`); this adds the header, the final outcome, the
scores and any ratings.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from cogym_lab.nodes.transcript import Transcript
from cogym_lab.records.trajectory import load_session


def show(session_dir: str | Path, *, width: int = 110) -> str:
    """The session in ``session_dir`` as plain text: who was on the team, every event, how it
    ended, the outcome, its scores and the ratings people gave."""
    record = load_session(session_dir)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, highlight=False,
                      soft_wrap=True)
    team = ", ".join(f"{m.role} ({m.kind})" for m in record.team) or "unknown"
    console.print(f"Session {record.session_id}  task={record.task}  instance={record.instance}")
    console.print(f"Team: {team}  agent type={record.agent_type}  model={record.model}")
    console.print(f"Status: {record.status}" + (f"  error: {record.error}" if record.error
                                                  else ""))
    console.print("")
    print_event = Transcript(console, record.task)
    for event in record.events:
        print_event(event)
    console.print("")
    console.print(f"Ended: {record.end_reason or 'unknown'}   Delivered: {record.delivered}")
    outcome = record.outcome
    if outcome is not None:
        text = outcome if isinstance(outcome, str) else json.dumps(outcome, ensure_ascii=False,
                                                                   indent=2)
        console.print("Outcome:")
        console.print(text, markup=False)
    scores = ", ".join(f"{k}={v:.3f}" for k, v in record.scores.items()) or "none"
    console.print(f"Scores: {scores}")
    for role, rating in record.ratings.items():
        console.print(f"Rating by {role}: outcome {rating.outcome_rating}, satisfaction "
                      f"{rating.satisfaction}" + (f", \"{rating.comment}\"" if rating.comment
                                                  else ""), markup=False)
    for role in record.roles:
        tokens = record.tokens[role]
        if tokens.total:
            console.print(f"Tokens {role}: {tokens.prompt} prompt + {tokens.completion} "
                          "completion")
    return buffer.getvalue()
