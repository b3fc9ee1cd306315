"""KitchenEnv: the real-time cooking task, a clocked CoEnv around :class:`game.Game`.

Members' actions only queue what a chef should do (they are private: an accepted one notifies
only its actor); the world changes in :meth:`KitchenEnv.advance`, which the session's clock
calls every ``tick_seconds``. The first two members of the team get the chefs, in team order;
without a team, the roles ``agent`` and ``user`` do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from cogym_lab.core import ActionError, CoEnv, Component, TickResult, action
from cogym_lab.core.actions import Action, format_action
from cogym_lab.core.env import MIN_TICK_SECONDS, ScoreReport
from cogym_lab.core.protocol import DEFAULT_PROTOCOL
from cogym_lab.core.render_shapes import ContentShape
from cogym_lab.envs.kitchen import macros
from cogym_lab.envs.kitchen.game import (
    CHOPS_NEEDED,
    EXTINGUISH_SPRAYS,
    FIRE_AFTER,
    INTERACT,
    MAX_QUEUED,
    OVERCOOKED_AFTER,
    WELL_COOKED_AFTER,
    Chef,
    Game,
)
from cogym_lab.envs.kitchen.layout import DIRECTIONS, WALL, load_layout, paper_order

#: The roles that get chefs when no team was bound (check_env, a bare env in a notebook).
DEFAULT_CHEF_ROLES = ("agent", "user")
KITCHEN = "kitchen"  # the component's name and render type


def _grid_problem(content: Any) -> str | None:
    """Why the panel's kitchen view cannot draw ``content`` (it draws the grid on a canvas)."""
    grid = content.get("grid") if isinstance(content, Mapping) else None
    if not isinstance(grid, list | tuple) or not grid:
        return 'has no non-empty "grid" list (the view shows "The kitchen is not open yet.")'
    if not all(isinstance(row, str) for row in grid):
        return 'its "grid" holds something other than strings (one string a row of tiles)'
    return None


class KitchenEnv(CoEnv):
    """Two chefs share a kitchen and serve burger orders against the clock (see the task
    description for the rules in plain words)."""

    name = "kitchen"

    @classmethod
    def session_minutes(cls, env_args: dict[str, Any]) -> float:
        """A game lasts its ticks at its pace, and a person needs a moment to get ready."""
        ticks = env_args.get("ticks", 500)
        tick_seconds = env_args.get("tick_seconds", 0.25)
        if isinstance(ticks, int | float) and isinstance(tick_seconds, int | float):
            return float(ticks) * float(tick_seconds) / 60 + 0.5
        return cls.typical_minutes
    default_team = "kitchen-fsm"
    #: With plans (``make_env("kitchen", plans=True)``): a step is a kitchen job, and the agent
    #: steps are the rule-based chef's task list (``plan_bridge``, ``policies.plan_follower``).
    plan_step_guidance = (
        "Each step names one kitchen job (plan_bridge.WHAT_A_STEP_MAY_SAY): prepare, cook or "
        "chop Beef, Lettuce or Bread; assemble, serve or make a dish; pass a thing over; put "
        "out fires; clean a counter ('twice' or a number: more than once; 'keep ...': until "
        "the step is completed). The agent's chef works the agent steps in order and completes "
        "each when its job is done; a step naming no kitchen job is failed for the person. "
        "Person steps are the person's share: complete them when done.")
    content_shapes: ClassVar[Mapping[str, ContentShape]] = {KITCHEN: ContentShape(
        'the game\'s state: an object with a non-empty "grid" (a list of strings, one character '
        'a tile) and its "legend", "chefs", "items", "orders" and clock', _grid_problem)}

    def __init__(self, layout: str = "counter_circuit", ticks: int = 500,
                 tick_seconds: float = 0.25, roles: Sequence[str] | None = None,
                 person_macros: bool = False) -> None:
        super().__init__(roles=roles)
        if type(person_macros) is not bool:  # not 0 or 1 either: a ValueError like the others
            raise ValueError(f"person_macros must be true or false, not {person_macros!r}.")
        # The paper's people played with moves and interact only; macros for them are opt-in.
        self.person_macros = person_macros
        if not isinstance(ticks, int) or isinstance(ticks, bool) or ticks < 1:
            raise ValueError(f"ticks must be a whole number of at least 1, not {ticks!r}.")
        if isinstance(tick_seconds, bool) or not isinstance(tick_seconds, int | float) \
                or not tick_seconds >= MIN_TICK_SECONDS:
            raise ValueError(f"tick_seconds must be a number of at least {MIN_TICK_SECONDS}, "
                             f"not {tick_seconds!r}.")
        self.layout = load_layout(layout)
        self.ticks = ticks
        self._tick_seconds = float(tick_seconds)
        self.game: Game | None = None

    @property
    def tick_seconds(self) -> float:
        return self._tick_seconds

    @classmethod
    def instances(cls, protocol: str = DEFAULT_PROTOCOL) -> list[dict[str, Any]]:
        """One instance per shipped layout, in the DPT-Agent paper's order: instance 0 is Map 1
        (New Counter Circuit), instance 1 Map 2 (New Asymmetric Advantages); see
        :meth:`instance_titles`."""
        return [{"layout": name} for name in paper_order()]

    @classmethod
    def instance_titles(cls, protocol: str = DEFAULT_PROTOCOL) -> list[str]:
        """Each instance's map as the paper names it, in instance order."""
        return [load_layout(name).map_title for name in paper_order()]

    def env_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"layout": self.layout.name, "ticks": self.ticks,
                                "tick_seconds": self._tick_seconds}
        if self.roles is not None:  # replay must admit the same roles, no others
            args["roles"] = list(self.roles)
        if self.person_macros:
            args["person_macros"] = True
        return args

    @property
    def task_description(self) -> str:
        seconds = self._tick_seconds
        return "\n".join([
            f"Cook burgers together in a busy kitchen ({self.layout.map_title}). The game runs "
            f"for {self.ticks} ticks of {seconds:g} seconds each, about "
            f"{self.ticks * seconds / 60:.1f} minutes. {self.layout.description}",
            "",
            "Each of the first two team members controls a chef. Every tick a chef can do one "
            "thing: step up, down, left or right, or interact with the tile it faces. Stepping "
            "towards a counter or station turns the chef to face it.",
            "",
            "How food is made:",
            f"- Beef comes Fresh from its station. Put it in a pan: it cooks to Well-cooked "
            f"after {WELL_COOKED_AFTER} ticks, is Overcooked after {OVERCOOKED_AFTER} and "
            f"sets the pan on fire after {FIRE_AFTER}. Take it out in time with a plate.",
            f"- Lettuce comes Unchopped. Put it on a chopping board and interact "
            f"{CHOPS_NEEDED} times with empty hands to chop it.",
            "- Bread needs no preparing. Plates come from the plate station.",
            "- Put the ready ingredients on one plate: Bread + Well-cooked Beef is a "
            "BeefBurger, Bread + Chopped Lettuce a LettuceBurger, all three a "
            "BeefLettuceBurger (Beef + Lettuce alone is a BeefLettuce, not a burger).",
            "- Take a burger to the serving window to fill an order.",
            f"- A fire blocks its pan until someone holding the fire extinguisher interacts "
            f"with it {EXTINGUISH_SPRAYS} times; the burnt beef is lost. Anything can be "
            f"thrown in the trash can.",
            "",
            "Scoring: an ordered LettuceBurger earns 15, a BeefBurger 20, a BeefLettuceBurger "
            "25. Serving anything that no open order asks for costs 10, and so does every "
            "order whose time runs out. New orders keep coming, each with its own deadline.",
            "",
            "Actions: MOVE(direction) and INTERACT() control the chef one tick at a time (up "
            f"to {MAX_QUEUED} may wait in line). Macro actions do a whole job, one step per "
            "tick, finding the way themselves: PREPARE(food, plate), ASSEMBLE(food), "
            "SERVE(food), PASS_ON(thing, thing_status), PUT_OUT_FIRE(), CLEAN_A_COUNTER(). A "
            "new macro replaces the running one; MOVE or INTERACT cancels it."
            + ("" if self.person_macros else " Macro actions are for agents: a person plays "
               "with MOVE and INTERACT only."),
        ])

    # -- state -----------------------------------------------------------------------------

    def _chef_roles(self) -> list[str]:
        if self.team:
            roles = [member.role for member in self.team]
        elif self.roles:
            roles = list(self.roles)
        else:
            roles = list(DEFAULT_CHEF_ROLES)
        return roles[:min(2, len(self.layout.chef_starts))]

    def _reset(self, seed: int | None) -> None:
        self.game = Game(self.layout, self._chef_roles(), self.ticks,
                         seed=0 if seed is None else seed)  # unseeded still replays alike

    def _game(self) -> Game:
        if self.game is None:
            raise RuntimeError("The kitchen has not been reset; call reset() first.")
        return self.game

    def moves_only_roles(self) -> list[str]:
        """The chefs' roles that play with moves and interact only: people's and simulated
        people's (members of kind ``user``, who stand in for a person), unless
        ``person_macros`` is on."""
        if self.person_macros:
            return []
        people = {member.role for member in self.team if member.kind in ("person", "user")}
        return [role for role in self._chef_roles() if role in people]

    def public_components(self) -> list[Component]:
        content = self._game().content(self._tick_seconds)
        content["moves_only"] = self.moves_only_roles()  # the panel hides these seats' macros
        return [Component(name=KITCHEN, title=self.layout.map_title, render_type=KITCHEN,
                          content=content)]

    # -- the clock -------------------------------------------------------------------------

    def advance(self) -> TickResult:
        game = self._game()
        if game.over:
            return TickResult(done=True, info={"score": game.score, "happened": [],
                                               "atomic": {}})
        reward, info = game.advance()
        return TickResult(reward=float(reward), done=game.over, info=info)

    # -- results ---------------------------------------------------------------------------

    def outcome(self) -> dict[str, Any]:
        game = self._game()
        return {"layout": self.layout.name, "ticks_played": game.tick, "score": game.score,
                "served": game.served, "missed": game.missed, "wrong": game.wrong}

    def delivered(self) -> bool:
        """Delivered once the game ran to its end."""
        return self.game is not None and self.game.over

    def evaluate(self) -> dict[str, float]:
        """The score, the dish counts, and ``performance``: the score as a share of what the
        orders that closed (served or missed) could have earned, clipped to [0, 1]."""
        game = self._game()
        possible = game.closed_reward
        performance = min(1.0, max(0.0, game.score / possible)) if possible else 0.0
        return {"score": float(game.score), "served": float(game.served),
                "missed": float(game.missed), "wrong": float(game.wrong),
                "performance": performance}

    def explain_scores(self, scores: dict[str, float]) -> list[ScoreReport]:
        game = self._game()
        served = f"{game.served} order{'s' if game.served != 1 else ''} served"
        missed = f"{game.missed} missed"
        wrong = f"{game.wrong} wrong dish{'es' if game.wrong != 1 else ''} served"
        explained = {
            "performance": ("The score as a share of what the closed orders could earn",
                            [f"{served}, {missed}; orders still open at the end count for "
                             f"nothing either way."]),
            "score": ("Points from served orders, less penalties", [f"{served}, {missed}, "
                                                                    f"{wrong}."]),
            "served": ("Orders served", []), "missed": ("Orders that ran out of time", []),
            "wrong": ("Dishes served that no order asked for", []),
        }
        return [ScoreReport(name=name, value=scores[name], label=label, reasons=reasons)
                for name, (label, reasons) in explained.items() if name in scores]

    # -- actions ---------------------------------------------------------------------------

    def _chef(self, role: str) -> Chef:
        game = self._game()
        if game.over:
            raise ActionError("The game is over: no more kitchen actions.")
        chef = game.chef(role)
        if chef is None:
            raise ActionError(f"{role[:40]!r} has no chef in this game; the chefs are "
                              f"{', '.join(c.role for c in game.chefs)}.")
        return chef

    def _queue(self, role: str, atomic: str) -> None:
        chef = self._chef(role)
        if len(chef.queue) >= MAX_QUEUED:
            raise ActionError(f"{MAX_QUEUED} moves are already waiting for your chef; send the "
                              f"next one after a tick.")
        if atomic in DIRECTIONS:
            (x, y), _ = self._game().predicted_pos(chef)
            dx, dy = DIRECTIONS[atomic]
            if self.layout.kind((x + dx, y + dy)) == WALL:
                raise ActionError(f"Moving {atomic} from {x},{y} walks into a wall.")
        self._game().queue(chef, atomic)

    def _allow_macro(self, role: str, name: str) -> None:
        """Refuse a person's macro unless ``person_macros`` is on (the paper's people had
        moves and interact only)."""
        if role in self.moves_only_roles():
            raise ActionError(f"{name} is a macro action, and people play with MOVE and INTERACT "
                              f"only here (arrow keys and Space), as in the DPT-Agent paper. "
                              f"Start the kitchen with person_macros=true to give people "
                              f"macro actions.")

    def _run(self, role: str, macro: macros.Macro) -> None:
        self._game().set_macro(self._chef(role), macro)

    def _label(self, name: str, **args: Any) -> str:
        return format_action(Action(name=name, args=args), self._specs[name])

    @action("Step your chef one tile up, down, left or right; towards a counter or station it "
            "only turns to face it.", private=True, direction="up, down, left or right")
    def move(self, role: str, direction: str) -> None:
        self._chef(role)
        self._queue(role, _choose(direction, tuple(DIRECTIONS), "direction"))

    @action("Use the tile your chef faces: pick up, put down, chop, plate, serve, or spray the "
            "extinguisher.", private=True)
    def interact(self, role: str) -> None:
        self._queue(role, INTERACT)

    @action("Prepare an ingredient: cook Beef in a pan, chop Lettuce on a board, or set Bread "
            "out; with plate=true, also put it on a plate.", private=True,
            name="PREPARE", food="Beef, Lettuce or Bread",
            plate="Put the prepared ingredient on a plate")
    def prepare_food(self, role: str, food: str, plate: bool = False) -> None:
        self._allow_macro(role, "PREPARE")
        self._chef(role)
        food = _choose(food, tuple(macros.PREPARE_FOODS), "food to prepare")
        self._run(role, macros.Prepare(self._label("PREPARE", food=food, plate=plate),
                                       food, plate))

    @action("Assemble a dish on a plate from ingredients that are ready.", private=True,
            food="BeefBurger, LettuceBurger, BeefLettuceBurger or BeefLettuce")
    def assemble(self, role: str, food: str) -> None:
        self._allow_macro(role, "ASSEMBLE")
        self._chef(role)
        food = _choose(food, macros.ASSEMBLE_FOODS, "dish to assemble")
        self._run(role, macros.Assemble(self._label("ASSEMBLE", food=food), food))

    @action("Take an assembled burger to the serving window.", private=True,
            food="BeefBurger, LettuceBurger or BeefLettuceBurger")
    def serve(self, role: str, food: str) -> None:
        self._allow_macro(role, "SERVE")
        self._chef(role)
        food = _choose(food, macros.SERVE_FOODS, "burger to serve")
        self._run(role, macros.Serve(self._label("SERVE", food=food), food))

    @action("Put something on a center counter for your partner.", private=True,
            thing="Plate, Bread, Beef, Lettuce, a dish, or FireExtinguisher",
            thing_status="For Beef or Lettuce, its status (e.g. Well-cooked, Chopped); "
                         "empty for any")
    def pass_on(self, role: str, thing: str, thing_status: str = "") -> None:
        self._allow_macro(role, "PASS_ON")
        self._chef(role)
        thing = _choose(thing, tuple(macros.PASS_THINGS), "thing to pass on")
        statuses = macros.PASS_THINGS[thing]
        status = _choose(thing_status, statuses, f"status of {thing}") \
            if thing_status.strip() and statuses else ""
        if thing_status.strip() and not statuses:
            raise ActionError(f"A {thing} has no status; leave thing_status empty.")
        self._run(role, macros.PassOn(self._label("PASS_ON", thing=thing, thing_status=status),
                                      thing, status))

    @action("Fetch the fire extinguisher and put out the nearest fire.", private=True)
    def put_out_fire(self, role: str) -> None:
        self._allow_macro(role, "PUT_OUT_FIRE")
        self._run(role, macros.PutOutFire(self._label("PUT_OUT_FIRE")))

    @action("Take overcooked beef, or else the item on the nearest counter, to the trash can.",
            private=True)
    def clean_a_counter(self, role: str) -> None:
        self._allow_macro(role, "CLEAN_A_COUNTER")
        self._run(role, macros.CleanACounter(self._label("CLEAN_A_COUNTER")))


def _choose(value: str, options: Sequence[str], what: str) -> str:
    """``value`` as one of ``options``, ignoring case and surrounding space."""
    wanted = value.strip().lower()
    for option in options:
        if option.lower() == wanted:
            return option
    raise ActionError(f"Unknown {what} {value[:40]!r}; choose one of {', '.join(options)}.")

