"""Studies with people, and their simulated arm: designs as data, assignment of conditions,
the steps a participant is led through, and one export for both arms (docs/studies.md)."""

from cogym_lab.studies.assignment import condition_order, sequence_for, williams_square
from cogym_lab.studies.design import StudyDesign
from cogym_lab.studies.steps import Step, plan_steps
from cogym_lab.studies.tables import write_export

__all__ = ["Step", "StudyDesign", "condition_order", "plan_steps", "sequence_for",
           "williams_square", "write_export"]
