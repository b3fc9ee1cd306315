"""``SessionSpec``: everything a session is built from, as one pydantic model.

The command line, the batch runner, the server extension (its REST create request, a resume,
its stored records), ``%cogym`` and ``new_session()`` all describe a session this way and build
it with :func:`cogym_lab.sessions.build_session`; ``session.json`` stores it, so a results
directory is enough to run its session again (``cogym-lab run --spec DIR/session.json``).

A spec is strict: ``"30"`` is not a number, and an unknown field is refused with its name.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    SerializationInfo,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from cogym_lab.teams.config import TeamConfig

#: A seat's name: what the panel puts in a URL, so letters, digits, '_', '.' and '-'.
RoleName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
#: The key of :attr:`SessionSpec.lm` whose settings go to every LM (members and tools).
EVERY_LM = "*"
#: The key of :attr:`SessionSpec.lm` whose settings go to the task's own tools only (its
#: drafting assistant, judges and parsers).
TOOLS = "tools"

#: Where a spec was made, when that changes the advice its messages give: ``"notebook"`` for
#: ``%cogym`` and ``cogym_lab.new_session()`` (a person in a notebook fixes a missing model with
#: ``%cogym config``, not with the server's environment). ``None``: anywhere else.
Origin = Literal["notebook"]
#: The serialization context that writes API keys out in the clear: only the create request
#: sent over the server's authenticated REST API uses it (``CreateRequest.body``).
REVEAL_SECRETS = "reveal_secrets"
#: The longest API key accepted; real ones are under 200 characters.
MAX_KEY_LENGTH = 1_000

# ``hide_input_in_errors``: a refused value (an API key) never appears in a validation error's
# text, wherever that text is shown or logged.
_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False,
                     hide_input_in_errors=True)


def check_plain_text(value: str, what: str) -> str:
    """``value`` if it is one line of text a setting can hold: no control characters (NUL,
    escapes, line breaks, U+2028/U+2029). ``ValueError`` naming ``what``, never echoing it."""
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value):
        raise ValueError(f"{what} may not contain line breaks or control characters")
    return value


def check_api_key(value: str) -> str:
    """``value`` if it can be an API key: 1 to ``MAX_KEY_LENGTH`` visible ASCII characters
    (it goes into an HTTP header). The ``ValueError`` never repeats the key."""
    if not value:
        raise ValueError("api_key is empty")
    if len(value) > MAX_KEY_LENGTH:
        raise ValueError(f"api_key is {len(value)} characters long; at most {MAX_KEY_LENGTH}")
    if not all("!" <= c <= "~" for c in value):
        raise ValueError("api_key may hold only visible ASCII characters (no spaces, line "
                         "breaks, control or non-ASCII characters)")
    return value


def _usable_key(value: Any) -> Any:
    text = value.get_secret_value() if isinstance(value, SecretStr) else value
    if isinstance(text, str):
        check_api_key(text)
    return value


#: An API key: checked by :func:`check_api_key` before it becomes a ``SecretStr``.
ApiKey = Annotated[SecretStr | None, BeforeValidator(_usable_key)]


def reveals_secrets(info: SerializationInfo) -> bool:
    """Whether a dump was asked to write API keys out (see :data:`REVEAL_SECRETS`)."""
    context = info.context
    return isinstance(context, dict) and context.get(REVEAL_SECRETS) is True


class LMSettings(BaseModel):
    """LM settings for some of a session's LMs; each is optional and overrides the environment
    (``COGYM_MODEL``, ``OPENAI_BASE_URL`` ...) and the team file."""

    model_config = _STRICT

    provider: Literal["openai", "local"] | None = None
    model: str | None = Field(default=None, max_length=500)
    base_url: str | None = Field(default=None, max_length=2_000)
    #: A secret: masked in ``repr``, left out of what is stored (``SessionSpec.stored``), and
    #: written out only for the authenticated create request (:data:`REVEAL_SECRETS`).
    api_key: ApiKey = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    #: The sampling seed sent with every call (``LMConfig.seed``): a batch run gives each
    #: member of each trial its own (``cogym_lab.eval.batch.seeds``).
    seed: int | None = Field(default=None, ge=-(2**63), lt=2**63)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    timeout: float | None = Field(default=None, gt=0, le=3_600)
    max_retries: int | None = Field(default=None, ge=0, le=20)
    deadline: float | None = Field(default=None, gt=0, le=86_400)
    backoff: float | None = Field(default=None, ge=0, le=600)

    @field_validator("model", "base_url")
    @classmethod
    def _one_line(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else check_plain_text(value, str(info.field_name))

    @field_serializer("api_key", when_used="json")
    def _key_in_json(self, key: SecretStr | None, info: SerializationInfo) -> str | None:
        """In JSON a key is written out only for the create request; anywhere else it is
        left out (``null``), never replaced by a mask that could pass for a key."""
        if key is None or not reveals_secrets(info):
            return None
        return key.get_secret_value()

    def settings(self) -> dict[str, Any]:
        """The settings given, by name (``LMConfig.resolve`` takes them as arguments; the key
        stays a ``SecretStr``)."""
        return self.model_dump(exclude_none=True)

    def chooses_lm(self) -> bool:
        """Whether these settings say which LM to call or how to reach it (model, endpoint,
        key or provider), as opposed to only how to call it (temperature, limits)."""
        return any(value is not None for value in (self.provider, self.model, self.base_url,
                                                   self.api_key))


class Limits(BaseModel):
    """Overrides of a session's timing and limits: each field is one of
    :class:`cogym_lab.nodes.SessionConfig`'s, and one left out keeps the team file's value (its
    ``[session]`` table), else ``SessionConfig``'s default."""

    model_config = _STRICT

    idle_seconds: float | None = Field(default=None, gt=0, le=86_400)
    timeout: float | None = Field(default=None, gt=0, le=7 * 86_400)
    max_idle_ticks: int | None = Field(default=None, ge=1, le=10_000)
    max_events: int | None = Field(default=None, ge=1, le=1_000_000)
    agent_step_limit: int | None = Field(default=None, ge=0, le=100_000)
    user_step_limit: int | None = Field(default=None, ge=0, le=100_000)
    step_limits: dict[str, Annotated[int, Field(ge=0, le=100_000)]] | None = None
    join_timeout: float | None = Field(default=None, gt=0, le=3_600)
    seed: int | None = Field(default=None, ge=-(2**63), lt=2**63)
    channel_ttl: float | None = Field(default=None, gt=0, le=30 * 86_400)
    #: ``"notifications"`` (Co-Gym's protocol) or ``"turns"`` (strict turn-taking, the paper's
    #: §5.3 ablation, ``cogym_lab.core.turns``); ``None``: the team's, else notifications.
    interaction: Literal["notifications", "turns"] | None = None
    #: Seconds a person's live typing must pause before the agents are told of it.
    announce_seconds: float | None = Field(default=None, ge=0, le=3_600)
    #: What a member's LM failing past its retries does: ``"end"`` the session (named as an
    #: LM failure), ``"continue"`` it, or ``"auto"`` (continue when a person is in the team).
    on_lm_failure: Literal["auto", "end", "continue"] | None = None

    def overrides(self) -> dict[str, Any]:
        """The limits given, by name."""
        return self.model_dump(exclude_none=True)


class NotebookRef(BaseModel):
    """A person's notebook, for a task that runs in one: its path under the server's root and
    its kernel's id. Only a Jupyter server with the cogym_lab extension can link one."""

    model_config = _STRICT

    path: str = Field(min_length=1, max_length=4_096)
    kernel_id: str = Field(min_length=1, max_length=200)
    #: The cell that started the session (its panel's cell): the agent's cells go below it.
    cell_id: str | None = Field(default=None, min_length=1, max_length=200)


#: Fields of :class:`Limits` that a flat request may give at the top level (see
#: :meth:`SessionSpec._accept_shorthands`).
_LIMIT_FIELDS = frozenset(Limits.model_fields)
_LM_FIELDS = frozenset(LMSettings.model_fields)


class SessionSpec(BaseModel):
    """One session: its task, the team that plays it, its LMs, rules and limits.

    * ``task``, ``instance`` and ``env_args`` make the env (``make_env``).
    * ``team`` names a ready team, a registered one, or (on your own machine) a team file; it
      may also be the team itself. ``None``: the task's default team (``CoEnv.default_team``).
    * ``people`` are the seats that people take from a panel: a team member of that role
      becomes a person seat, another name adds one.
    * ``outside`` are team members whose seat an outside agent takes (over MCP): the member
      is not built, and the seat keeps the kind the team gives it (an agent stays an agent).
    * ``lm`` maps ``"*"`` (every LM), a role, or ``"tools"`` (the task's own LMs) to settings.
    * ``protocol`` names the scoring protocol (``None``: the default, ``cogym``).
    * ``limits`` override the team's session settings (its interaction included).
    * ``notebook``: run in this notebook's kernel and document (a server links it).
    * ``data_dir``: the folder the task reads its data from, on the machine that builds the
      session (``None``: that machine's own, ``COGYM_DATA`` or the user cache). It is given to
      a task that takes a ``data_dir`` (an explicit ``env_args.data_dir`` wins), and ignored by
      one that reads no data, so a notebook can send it with every request.
    * ``origin``: where the spec was made, for the advice in messages (:data:`Origin`).
    """

    model_config = _STRICT

    task: str = Field(min_length=1, max_length=200)
    instance: int | None = Field(default=None, ge=0)
    env_args: dict[str, Any] = Field(default_factory=dict)
    team: Annotated[str, Field(min_length=1, max_length=4_096)] | TeamConfig | None = None
    people: list[RoleName] = Field(default_factory=list)
    outside: list[RoleName] = Field(default_factory=list)
    lm: dict[Annotated[str, Field(min_length=1, max_length=64)], LMSettings] = Field(
        default_factory=dict)
    protocol: str | None = Field(default=None, max_length=200)
    limits: Limits = Field(default_factory=Limits)
    notebook: NotebookRef | None = None
    data_dir: str | None = Field(default=None, min_length=1, max_length=4_096)
    origin: Origin | None = None

    @field_validator("data_dir")
    @classmethod
    def _one_line_path(cls, value: str | None) -> str | None:
        return None if value is None else check_plain_text(value, "data_dir")

    @model_validator(mode="before")
    @classmethod
    def _accept_shorthands(cls, data: Any) -> Any:
        """Two shorthands that requests and older records use: limits at the top level
        (``{"idle_seconds": 5}``; ``"settings"`` in records), and one LM table for every LM
        (``"lm": {"model": ...}``)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        flat = {name: data.pop(name) for name in list(data) if name in _LIMIT_FIELDS}
        stored = data.pop("settings", None)
        if isinstance(stored, dict):
            flat = {**stored, **flat}
        if flat:
            limits = data.get("limits")
            data["limits"] = {**flat, **(limits if isinstance(limits, dict) else {})}
        lm = data.get("lm")
        if isinstance(lm, dict) and lm and set(lm) <= _LM_FIELDS \
                and not any(isinstance(value, dict) for value in lm.values()):
            data["lm"] = {EVERY_LM: lm}
        elif lm is None and "lm" in data:
            del data["lm"]
        return data

    @model_validator(mode="after")
    def _seats_are_named_once(self) -> SessionSpec:
        repeated = sorted({role for role in self.people if self.people.count(role) > 1})
        if repeated:
            raise ValueError(f"people lists {', '.join(repeated)} more than once")
        repeated = sorted({role for role in self.outside if self.outside.count(role) > 1})
        if repeated:
            raise ValueError(f"outside lists {', '.join(repeated)} more than once")
        both = sorted(set(self.outside) & set(self.people))
        if both:  # a person's seat or an outside agent's, not both
            raise ValueError(f"{', '.join(both)} is in both people and outside")
        if self.notebook is not None and not self.people:
            self.people = ["user"]  # the notebook's person needs a seat
        return self

    # -- reading it ----------------------------------------------------------------------------

    @property
    def team_name(self) -> str | None:
        """The team as named (its own name when the spec holds the team itself)."""
        return self.team.name if isinstance(self.team, TeamConfig) else self.team

    def lm_arguments(self) -> dict[str, dict[str, Any]]:
        """The LM settings given, by key (``"*"``, a role, ``"tools"``)."""
        return {key: settings.settings() for key, settings in self.lm.items()}

    def lm_for(self, role: str) -> dict[str, Any]:
        """The LM settings of ``role`` (or ``"tools"``): its own over those for every LM."""
        return {**self.lm_arguments().get(EVERY_LM, {}), **self.lm_arguments().get(role, {})}

    def without_secrets(self) -> SessionSpec:
        """This spec with every API key left out: what is written to disk. A run from it
        reads keys from the environment."""
        return self.model_copy(update={"lm": {
            key: settings.model_copy(update={"api_key": None})
            for key, settings in self.lm.items()}})

    def stored(self) -> dict[str, Any]:
        """The spec as ``session.json`` and ``hosting.json`` hold it: JSON, no secrets, and no
        field left at its default."""
        return self.without_secrets().model_dump(mode="json", exclude_none=True,
                                                 exclude_defaults=True)


__all__ = ["EVERY_LM", "MAX_KEY_LENGTH", "REVEAL_SECRETS", "TOOLS", "LMSettings", "Limits",
           "NotebookRef", "Origin", "RoleName", "SessionSpec", "check_api_key",
           "check_plain_text"]
