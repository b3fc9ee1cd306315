"""TravelPlanner's micro, macro and final pass rates and Co-Gym's task performance, on verdicts
written by hand and computed by hand."""

from __future__ import annotations

import pytest

from cogym_lab.envs.travel_planning.constraint_names import COMMONSENSE
from cogym_lab.envs.travel_planning.pass_rates import PlanVerdicts, pass_rates


def _commonsense(*failing: str) -> dict[str, bool]:
    """Every commonsense check passing but those named."""
    assert set(failing) <= set(COMMONSENSE)
    return {name: name not in failing for name in COMMONSENSE}


def _hard(cuisine: bool | None = None, rule: bool | None = None, transport: bool | None = None,
          room: bool | None = None, cost: bool = True) -> dict[str, bool | None]:
    return {"valid_cuisine": cuisine, "valid_room_rule": rule, "valid_transportation": transport,
            "valid_room_type": room, "valid_cost": cost}


# everything passes: 3 hard constraints apply
PERFECT = PlanVerdicts(True, _commonsense(), _hard(rule=True, room=True))
# fails Within Sandbox, so eval.py never grades its hard constraints (2 of 3 pass)
OUTSIDE = PlanVerdicts(True, _commonsense("is_valid_information_in_sandbox"),
                       _hard(cuisine=True, transport=False))
# a repeated restaurant and over budget; its hard constraints are graded (0 of 1 passes)
REPEATS = PlanVerdicts(True, _commonsense("is_valid_restaurants"), _hard(cost=False))
# nothing delivered: every commonsense check fails, as does every hard constraint asked for
NOTHING = PlanVerdicts(False, {name: False for name in COMMONSENSE}, _hard(room=False, cost=False))


def test_one_plan() -> None:
    assert (PERFECT.hard_evaluated, PERFECT.commonsense_pass, PERFECT.hard_pass,
            PERFECT.final_pass, PERFECT.cogym_performance) == (True, True, True, True, 1.0)
    assert not OUTSIDE.hard_evaluated and not OUTSIDE.hard_pass
    assert OUTSIDE.commonsense_pass_rate == 7 / 8 and OUTSIDE.hard_pass_rate == 2 / 3
    assert OUTSIDE.cogym_performance == pytest.approx((7 / 8 + 2 / 3) / 2)  # not gated
    assert REPEATS.hard_evaluated and not REPEATS.hard_pass and not REPEATS.commonsense_pass
    assert REPEATS.cogym_performance == pytest.approx(7 / 16)
    assert NOTHING.cogym_performance == 0.0 and not NOTHING.hard_evaluated


def test_rates_over_plans() -> None:
    rates = pass_rates([PERFECT, OUTSIDE, REPEATS, NOTHING])
    assert rates.plans == 4 and rates.delivery_rate == 0.75
    assert rates.commonsense_micro == (8 + 7 + 7 + 0) / 32
    # 3 + 3 + 1 + 2 hard constraints apply; only PERFECT's 3 and REPEATS' 0 passes are graded
    assert rates.hard_micro == 3 / 9
    assert rates.commonsense_macro == 1 / 4 and rates.hard_macro == 1 / 4
    assert rates.final_pass_rate == 1 / 4
    assert rates.cogym_performance == pytest.approx((1 + (7 / 8 + 2 / 3) / 2 + 7 / 16 + 0) / 4)
    assert rates.to_dict()["hard_micro_pass_rate"] == 3 / 9


def test_hard_constraints_alone_do_not_make_a_final_pass() -> None:
    # all hard constraints pass and are graded, but a commonsense check fails
    plan = PlanVerdicts(True, _commonsense("is_valid_accommodation"), _hard(room=True))
    rates = pass_rates([plan, PERFECT])
    assert (rates.commonsense_macro, rates.hard_macro, rates.final_pass_rate) == (0.5, 1.0, 0.5)
    assert rates.hard_micro == 4 / 4


def test_an_error_costs_its_whole_part_in_cogym_performance() -> None:
    # the official cost raised: Co-Gym's evaluator catches it and counts no hard constraint
    plan = PlanVerdicts(True, _commonsense("is_valid_information_in_sandbox"),
                        _hard(cuisine=True, cost=False), errors={"valid_cost": "no route"})
    assert plan.hard_pass_rate == 0.0 and plan.cogym_performance == 7 / 16
    assert not plan.hard_evaluated


def test_verdicts_read_back_from_a_grade_line() -> None:
    line = {"delivered": True, "commonsense": dict(_commonsense()), "hard": _hard(room=True),
            "errors": {}, "instance": 3}
    assert PlanVerdicts.from_json(line) == PlanVerdicts(True, _commonsense(), _hard(room=True))
    assert pass_rates([PlanVerdicts.from_json(line)]).final_pass_rate == 1.0
    with pytest.raises(ValueError, match="No plan"):
        pass_rates([])
