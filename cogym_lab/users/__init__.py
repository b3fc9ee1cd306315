"""Simulated users: LMs that play the human side of a team with hidden information."""

from cogym_lab.users.simulated import Move, Persona, SimulatedUser

__all__ = ["Move", "Persona", "SimulatedUser"]
