"""The LM user simulator as a member type (Co-Gym Appendix C.3)."""

from __future__ import annotations

from dataclasses import fields

from cogym_lab.core.member import MemberSetup, MemberType
from cogym_lab.users.simulated import Persona, SimulatedUser


def _build(setup: MemberSetup) -> SimulatedUser:
    assert setup.lm is not None  # the registry gives every LM type its LM
    options = dict(setup.options)
    persona_fields = {f.name for f in fields(Persona)}
    persona = Persona(**{k: options.pop(k) for k in list(options) if k in persona_fields})
    return SimulatedUser(setup.lm, setup.hidden_information or "", persona=persona, **options)


SIMULATED_USER = MemberType(
    name="simulated", kind="user", build=_build,
    summary="An LM playing the person, with the task's hidden information.", takes_traits=True)
