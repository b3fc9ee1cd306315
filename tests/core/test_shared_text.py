"""A shared text's CRDT document (core.shared_text): edits made on older versions are forked,
merged and settled by the rule of core.concurrent_edits; panels' Yjs replicas converge with it;
its logged updates rebuild the same document; and what is not a usable update is refused."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc, Text

from cogym_lab.core.shared_text import (
    ROOT,
    SESSION_CLIENT,
    SharedText,
    TextEditError,
)
from tests.support.merge_checks import check_merge
from tests.support.panel_replica import PanelReplica

BASE = "Day 1: beach\nDay 2: Getty\nDay 3: fly home\n"
PERSON = "Day 1: beach\nDay 3: fly home\n"
AGENT = "Day 1: beach\nDay 2: Getty museum at dawn\nDay 3: fly home\n"


class Server:
    """A shared text and the log of what it committed, as a session keeps them."""

    def __init__(self, text: str) -> None:
        self.shared = SharedText(text, seq=1)
        self.seq = 1
        self.log: list[tuple[int, str, bytes, int | None, bytes | None]] = [
            (1, "", self.shared.state(), None, None)]

    def replace(self, author: str, text: str, base_seq: int):
        self.seq += 1
        edit = self.shared.replacement(text, seq=self.seq, author=author,
                                       base=self.shared.version_at(base_seq))
        self.log.append((self.seq, author, self.shared.commit(edit, seq=self.seq, author=author),
                         None, None))
        return edit

    def live(self, author: str, replica: PanelReplica, batch):
        self.seq += 1
        edit = self.shared.live_update(batch.update, client=replica.client, author=author,
                                       base=self.shared.version_at(batch.seen_seq))
        self.log.append((self.seq, author, self.shared.commit(edit, seq=self.seq, author=author),
                         replica.client, batch.update))
        return edit

    def news(self, replica: PanelReplica) -> dict[str, str]:
        update = self.shared.update_since(replica.doc.get_state())
        return {replica.component: base64.b64encode(update).decode()}

    def replayed(self) -> SharedText:
        fresh = SharedText()
        for seq, author, update, client, own in self.log:
            fresh.apply_logged(update, seq=seq, author=author or None, client=client,
                               own_update=own)
        return fresh


def _joined(replica: PanelReplica, server: Server) -> None:
    replica.receive({replica.component: base64.b64encode(server.shared.state()).decode()},
                    server.seq)


# -- the cases ---------------------------------------------------------------------------

@pytest.mark.parametrize("person_first", [True, False])
def test_a_line_deleted_while_the_agent_edits_it_keeps_the_agents_line(person_first: bool
                                                                        ) -> None:
    server = Server(BASE)
    if person_first:
        server.replace("user", PERSON, 1)
        edit = server.replace("agent", AGENT, 1)
    else:
        server.replace("agent", AGENT, 1)
        edit = server.replace("user", PERSON, 1)
    assert server.shared.text == AGENT  # untouched "Day 3: fly home" stays whole
    assert [o.lines for o in edit.overlaps] == [(2, 2)]
    assert edit.authors == (("agent",) if not person_first else ("user",))


def test_an_agent_edit_on_a_stale_version_merges_with_a_panels_typing() -> None:
    server = Server(BASE)
    panel = PanelReplica(client=11)
    _joined(panel, server)
    panel.type(0, 0, "Title\n")  # the person types at the top
    server.replace("agent", AGENT, 1)  # the agent edits day 2 on the version it saw
    batch = panel.receive(server.news(panel), server.seq)  # the typing crossed it on the wire
    assert batch is not None
    server.live("user", panel, batch)
    panel.receive(server.news(panel), server.seq)
    assert server.shared.text == "Title\n" + AGENT == panel.value


def test_a_panel_deleting_a_line_the_agent_edited_meanwhile_converges_whole() -> None:
    server = Server(BASE)
    panel = PanelReplica(client=12)
    _joined(panel, server)
    start = BASE.index("Day 2")
    panel.type(start, start + len("Day 2: Getty\n"), "")  # the person deletes day 2
    edit_seq = server.seq
    server.replace("agent", AGENT, edit_seq)  # ... while the agent rewrites it
    batch = panel.take()
    assert batch is not None
    edit = server.live("user", panel, batch)
    panel.receive(server.news(panel), server.seq)
    # The CRDT alone leaves " museum at dawn" glued to "Day 3"; the rule keeps whole lines.
    assert server.shared.text == AGENT == panel.value
    assert edit.authors == ("agent",) and [o.lines for o in edit.overlaps] == [(2, 2)]


# -- convergence and replay, whatever the interleaving ------------------------------------------

LINE = st.sampled_from(["Day 4: zoo", "note", "", "x y", "é 😀", "<i>&</i>", "a\u2028b", "\x00"])
OP = st.one_of(
    st.tuples(st.just("type"), st.sampled_from([0, 1]), st.integers(0, 80), st.integers(0, 12),
              LINE),
    st.tuples(st.just("send"), st.sampled_from([0, 1])),
    st.tuples(st.just("deliver"), st.sampled_from([0, 1])),
    st.tuples(st.just("agent"), st.integers(0, 5), st.integers(0, 6), LINE),
)


@given(ops=st.lists(OP, max_size=25))
@settings(max_examples=150, deadline=None)
def test_panels_and_agent_edits_converge_and_the_log_rebuilds_the_document(ops) -> None:
    server = Server(BASE)
    panels = [PanelReplica(client=21), PanelReplica(client=22)]
    for panel in panels:
        _joined(panel, server)

    def send(panel: PanelReplica, batch) -> None:
        if batch is not None:
            server.live(f"user{panel.client}", panel, batch)

    for op in ops:
        if op[0] == "type":
            _, which, at, length, words = op
            panels[which].type(at, at + length, words)
        elif op[0] == "send":
            send(panels[op[1]], panels[op[1]].take())
        elif op[0] == "deliver":
            panel = panels[op[1]]
            send(panel, panel.receive(server.news(panel), server.seq))
        else:
            _, stale_by, line_no, words = op
            base_seq = max(1, server.seq - stale_by)
            lines = server.shared.text_at(server.shared.version_at(base_seq)).split("\n")
            lines.insert(min(line_no, len(lines)), words)
            server.replace("agent", "\n".join(lines), base_seq)
        replayed = server.replayed()
        assert replayed.text == server.shared.text
        assert replayed.state_vector() == server.shared.state_vector()
    for panel in panels:  # everyone sends what is left, and hears everything
        send(panel, panel.take())
    for panel in panels:
        send(panel, panel.receive(server.news(panel), server.seq))
        assert panel.value == server.shared.text


@given(base=st.sampled_from([BASE, "one\ntwo", "", "a\n\nb\n"]),
       person_at=st.integers(0, 40), person_cut=st.integers(0, 15), person_words=LINE,
       agent_line=st.integers(0, 5), agent_words=LINE)
@settings(max_examples=150, deadline=None)
def test_a_live_edit_and_an_agent_edit_give_one_text_in_either_order(
        base, person_at, person_cut, person_words, agent_line, agent_words) -> None:
    results = []
    for person_first in (True, False):
        server = Server(base)
        panel = PanelReplica(client=31)
        _joined(panel, server)
        panel.type(person_at, person_at + person_cut, person_words)
        batch = panel.take()
        lines = base.split("\n")
        lines.insert(min(agent_line, len(lines)), agent_words)
        agent_text = "\n".join(lines)
        if person_first:
            if batch is not None:
                server.live("user", panel, batch)
            server.replace("agent", agent_text, 1)
        else:
            server.replace("agent", agent_text, 1)
            if batch is not None:
                server.live("user", panel, batch)
        panel.receive(server.news(panel), server.seq)
        assert panel.value == server.shared.text
        if batch is not None:
            check_merge(base, batch.text, agent_text, server.shared.text)
        results.append(server.shared.text)
    assert results[0] == results[1]


# -- what is refused -------------------------------------------------------------------------

def test_what_is_not_an_update_is_refused() -> None:
    shared = SharedText(BASE)
    with pytest.raises(TextEditError, match="Yjs update"):
        shared.live_update(b"\xff\xfe not an update", client=5, author="user")
    assert shared.text == BASE


def test_an_update_with_another_replicas_operations_is_refused() -> None:
    shared = SharedText(BASE)
    forger = Doc(client_id=SESSION_CLIENT)  # pretends to be the session itself
    forger.apply_update(shared.state())
    before = forger.get_state()
    forger.get(ROOT, type=Text).insert(0, "x")
    with pytest.raises(TextEditError, match="other replicas"):
        shared.live_update(forger.get_update(before), client=5, author="user")
    with pytest.raises(TextEditError, match="below 2\\*\\*32"):
        shared.live_update(forger.get_update(before), client=SESSION_CLIENT, author="user")


def test_an_update_built_on_text_the_session_lacks_is_refused() -> None:
    shared = SharedText(BASE)
    panel = PanelReplica(client=41)
    panel.receive({"editor": base64.b64encode(shared.state()).decode()}, 1)
    panel.type(0, 0, "first ")
    first = panel.take()
    panel.type(0, 0, "second ")
    second = panel.take()
    assert first is not None and second is not None
    with pytest.raises(TextEditError, match="sync first"):  # the first never arrived
        shared.live_update(second.update, client=41, author="user")
    assert shared.text == BASE


# -- hostile text ----------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["\u2028line\u2029sep\n", "nul\x00byte\n", "<script>x</script>\n",
                                  "😀 é 中\n" * 3, "w " * 500_000])
def test_hostile_text_round_trips_through_the_document_and_a_replica(text: str) -> None:
    server = Server("start\n")
    server.replace("agent", text, 1)
    panel = PanelReplica(client=51)
    _joined(panel, server)
    assert server.shared.text == text == panel.value
    end = len(panel.value)
    panel.type(end, end, "tail")
    batch = panel.take()
    assert batch is not None
    server.live("user", panel, batch)
    assert server.shared.text == text + "tail" == server.replayed().text
