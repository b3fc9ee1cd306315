"""What a session was made with, for its ``session.json``: the layer that knows teams, users and
data works it out, so the session node (below them) only stores it."""

from __future__ import annotations

import logging

from cogym_lab.nodes.session import Session
from cogym_lab.provenance import Provenance, session_provenance
from cogym_lab.provenance.model import SIMULATED_USER
from cogym_lab.users.simulated import SimulatedUser

__all__ = ["session_record"]

log = logging.getLogger(__name__)


def session_record(session: Session) -> Provenance | None:
    """The versions, data checksums and standard-or-custom of ``session``
    (:func:`cogym_lab.provenance.session_provenance`); ``None`` if they cannot be worked out,
    which is logged and never costs the session. Hashes data files: call it off the loop."""
    team = session.team_config
    people = [m.role for m in session.team if m.kind == "person"]
    if team is not None:
        simulated = any(member.type == SIMULATED_USER and role not in people
                        for role, member in team.members.items())
    else:
        simulated = any(isinstance(m, SimulatedUser) for m in session.members.values())
    try:
        return session_provenance(
            task=session.task, protocol=session.env.protocol, env=session.env, team=team,
            people=people, simulated_user=simulated, data=session.data_source,
            data_folder=getattr(session.env, "data_dir", None), sample=session.data_sample)
    except Exception:  # a record that cannot be made never stops the session
        log.exception("session %s: its provenance could not be worked out", session.session_id)
        return None
