"""A scripted agent and user for Tabular Analysis sessions: the agent reads the instance's first
table with pandas in the real kernel, looks at it again, writes a finding and finishes."""

from __future__ import annotations

from typing import Any

from cogym_lab.core import Action
from cogym_lab.core.grammar import format_action
from cogym_lab.testing import Reply
from tests.support.lm_scripts import chat_lines, classify, system_text, user_choice


class TabularRolePlay:
    def __init__(self, first_file: str, judge_reply: str) -> None:
        self.first_file = first_file
        self.judge_reply = judge_reply
        self.judged = 0

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        kind = classify(body)
        text = system_text(body)
        if kind == "unknown":  # the hypothesis judge
            self.judged += 1
            return self.judge_reply
        if kind == "scratchpad":
            return "Action: DO_NOTHING()"
        if kind == "act":
            notebook = text.split("## Notebook", 1)[-1].split("## Findings", 1)[0]
            if "In [" not in notebook and "is running" not in notebook:
                code = (f"import pandas as pd\ndf = pd.read_csv({self.first_file!r})\n"
                        "print('rows', len(df), 'columns', len(df.columns))")
                return "Action: " + format_action(Action(name="EXECUTE_JUPYTER_CELL",
                                                         args={"code": code}))
            if "rows" in notebook and "describe" not in notebook:
                code = "summary = df.describe(include='all')\nprint(summary.shape)"
                return "Action: " + format_action(Action(name="EXECUTE_JUPYTER_CELL",
                                                         args={"code": code}))
            if "is running" in notebook:
                return "Action: WAIT_TEAMMATE_CONTINUE()"
            findings = text.split("## Findings (shared editor)", 1)[-1].split("\n## ", 1)[0]
            if "(empty)" in findings:
                return ('Action: EDITOR_UPDATE(text="The data show a positive relation '
                        'between the two main variables.")')
            return "Action: FINISH()"
        if kind == "user-decide":
            spoke = any(line.startswith("[you]") for line in chat_lines(body))
            return user_choice(body, "nothing" if spoke else "feedback")
        if kind == "user-feedback":
            return "Message: Please look at the whole table before you conclude."
        return Reply(status=500, error=f"no scripted reply for {kind}")
