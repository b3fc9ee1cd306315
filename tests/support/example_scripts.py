"""A scripted agent for a person's own DataFrame (the first example notebook): it reads the data
from where the task says it is (a kernel variable or a file), fits how sales move with
advertising and price, writes that as the finding and tells the person."""

from __future__ import annotations

import re
from typing import Any

from cogym_lab.core import Action
from cogym_lab.core.grammar import format_action
from cogym_lab.testing import Reply
from tests.support.lm_scripts import chat_lines, classify, system_text

FINDING = "Sales rise by about 2.5 per unit of advertising and fall by about 12 per unit of price."


def _act(name: str, **args: Any) -> str:
    return "Action: " + format_action(Action(name=name, args=args))


class OwnDataRolePlay:
    def __init__(self) -> None:
        self.code: list[str] = []

    def load_code(self, text: str) -> str:
        variable = re.search(r"the variable `(\w+)`", text)
        if variable:
            return f"data = {variable.group(1)}"
        path = re.search(r"in the file `([^`]+)`", text)
        return f"import pandas as pd\ndata = pd.read_csv({path.group(1)!r})"

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        kind = classify(body)
        text = system_text(body)
        if kind == "scratchpad":
            return "Action: DO_NOTHING()"
        if kind != "act":
            return Reply(status=500, error=f"no scripted reply for {kind}")
        notebook = text.split("## Notebook", 1)[-1].split("## Findings", 1)[0]
        if "slopes" not in notebook and "is running" not in notebook:
            code = (self.load_code(text) + "\nimport numpy as np\n"
                    "X = np.column_stack([data['advertising'], data['price'], np.ones(len(data))])"
                    "\nslopes = np.linalg.lstsq(X, data['sales'], rcond=None)[0]\n"
                    "print('slopes', slopes.round(1))")
            self.code.append(code)
            return _act("EXECUTE_JUPYTER_CELL", code=code)
        if "is running" in notebook:
            return "Action: WAIT_TEAMMATE_CONTINUE()"
        findings = text.split("## Findings (shared editor)", 1)[-1].split("\n## ", 1)[0]
        if "(empty)" in findings:
            return _act("EDITOR_UPDATE", text=FINDING)
        if not any(line.startswith("[you]") for line in chat_lines(body)):
            return _act("SEND_TEAMMATE_MESSAGE", message="Done: the finding is in the editor.")
        return "Action: WAIT_TEAMMATE_CONTINUE()"
