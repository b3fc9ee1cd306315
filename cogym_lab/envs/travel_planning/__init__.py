"""The Travel Planning task: TravelPlanner's sandbox database, a shared plan editor, hidden
preferences for the simulated user, and TravelPlanner's commonsense and hard-constraint checks."""

from cogym_lab.envs.travel_planning.env import TravelPlanningEnv

__all__ = ["TravelPlanningEnv"]
