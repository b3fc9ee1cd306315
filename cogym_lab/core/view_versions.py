"""What each member was last shown of its view, with a version per component: the env's side of
the update format (``docs/notifications.md``).

A component's version, for a member, is the ``seq`` of the event whose update first showed it
in its present state. What a member was shown is kept as a *fingerprint*, not as the component:
an env may hand out its own list or dict as a component's content and change it in place later,
and a kept reference would then change with it, so the change would never be seen. A text is
its own fingerprint (strings cannot change, and comparing one with itself costs nothing);
other content is fingerprinted by its JSON, worked out once per component object and event
for all the members it is shown to.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from cogym_lab.core.observation import Component, Observation

#: What a member was shown of one component: everything but its content, and the content's
#: fingerprint.
Fingerprint = tuple[str, str, bool, str, Any]

#: A cache of fingerprints for the components of one event's views: id -> (component, print).
#: The component is held so that its id is not reused while the cache lives.
Prints = dict[int, tuple[Component, Fingerprint]]


def fingerprint(component: Component, cache: Prints | None = None) -> Fingerprint:
    """What identifies ``component``'s state, safe to keep while the env changes it."""
    if cache is not None and (known := cache.get(id(component))) is not None:
        return known[1]
    content = component.content
    if not isinstance(content, str):
        content = to_json(content, fallback=str)  # bytes: a copy the env cannot change
    made = (component.name, component.render_type, component.private, component.title, content)
    if cache is not None:
        cache[id(component)] = (component, made)
    return made


class ViewVersions:
    """The components each member was shown, and when each last changed for it."""

    def __init__(self) -> None:
        self._shown: dict[str, dict[str, tuple[int, Fingerprint]]] = {}

    def diff(self, role: str, view: Observation, seq: int, *, record: bool = True,
             cache: Prints | None = None) -> tuple[list[Component], dict[str, int]]:
        """The components of ``view`` that ``role`` has not been shown as they are, and the
        version of every component, for an update of event ``seq``. With ``record`` (not for
        a watcher), ``role`` is taken to have been shown ``view`` now. ``cache`` shares the
        fingerprints of one event's components between its recipients."""
        shown = self._shown.get(role, {})
        changed: list[Component] = []
        now: dict[str, tuple[int, Fingerprint]] = {}
        for component in view.components:
            made = fingerprint(component, cache)
            before = shown.get(component.name)
            if before is not None and before[1] == made:
                now[component.name] = before
            else:
                now[component.name] = (seq, made)
                changed.append(component)
        if record:
            self._shown[role] = now
        return changed, {name: version for name, (version, _) in now.items()}

    def differs(self, role: str, view: Observation, cache: Prints | None = None) -> bool:
        """Whether ``role`` would be shown anything new in ``view``; records nothing. A member
        never shown anything differs."""
        shown = self._shown.get(role)
        if shown is None or len(shown) != len(view.components):
            return True
        for component in view.components:
            before = shown.get(component.name)
            if before is None or before[1] != fingerprint(component, cache):
                return True
        return False


__all__ = ["ViewVersions", "fingerprint"]
