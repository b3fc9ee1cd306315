"""The names of TravelPlanner's constraints: the official function names, in the official order,
and the terms its paper uses for them."""

from __future__ import annotations

__all__ = ["COMMONSENSE", "HARD", "PAPER_TERMS"]

COMMONSENSE = ("is_reasonable_visiting_city", "is_valid_restaurants", "is_valid_attractions",
               "is_valid_accommodation", "is_valid_transportation",
               "is_valid_information_in_current_city", "is_valid_information_in_sandbox",
               "is_not_absent")
HARD = ("valid_cuisine", "valid_room_rule", "valid_transportation", "valid_room_type",
        "valid_cost")

PAPER_TERMS = {
    "is_reasonable_visiting_city": "Reasonable City Route",
    "is_valid_restaurants": "Diverse Restaurants",
    "is_valid_attractions": "Diverse Attractions",
    "is_valid_accommodation": "Minimum Nights Stay",
    "is_valid_transportation": "Non-conf. Transportation",
    "is_valid_information_in_current_city": "Within Current City",
    "is_valid_information_in_sandbox": "Within Sandbox",
    "is_not_absent": "Complete Information",
    "valid_cuisine": "Cuisine",
    "valid_room_rule": "Room Rule",
    "valid_transportation": "Transportation",
    "valid_room_type": "Room Type",
    "valid_cost": "Budget",
}
