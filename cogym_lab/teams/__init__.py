"""Team files and the builder that turns them into teammates."""

from cogym_lab.teams.config import MemberConfig, TeamConfig, load_team, ready_teams

__all__ = ["MemberConfig", "TeamConfig", "build_team", "load_team", "ready_teams"]


def __getattr__(name: str):  # the builder imports the LM stack: load it only when used
    if name == "build_team":
        from cogym_lab.teams.build import build_team

        return build_team
    raise AttributeError(name)
