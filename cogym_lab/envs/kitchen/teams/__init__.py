"""The kitchen's ready teams, one per agent, each with a rule-based partner standing in for the
person (``cogym-lab teams`` lists them; the ``cogym_lab.teams`` entry points name them)."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).parent

FSM = _HERE / "kitchen-fsm.toml"
ACT = _HERE / "kitchen-act.toml"
REACT = _HERE / "kitchen-react.toml"
REFLEXION = _HERE / "kitchen-reflexion.toml"
DPT = _HERE / "kitchen-dpt.toml"
DPT_NO_TOM = _HERE / "kitchen-dpt-no-tom.toml"
DPT_LM_PARTNER = _HERE / "kitchen-dpt-lm-partner.toml"

__all__ = ["ACT", "DPT", "DPT_LM_PARTNER", "DPT_NO_TOM", "FSM", "REACT", "REFLEXION"]
