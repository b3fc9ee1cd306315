"""The lean request path: an OpenAI-compatible LM without the ``openai`` package, a body encoded
once per call, request options from ``extra``, a call log that keeps its file open and loses no
line when its process is killed, and message cleaning done once per text."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogym_lab.core.text import clean
from cogym_lab.lm import LMConfig, OpenAILM, calllog, make_lm, openai_client, text_memo
from cogym_lab.lm.calllog import read_calls, write_call
from cogym_lab.testing import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

USER = [{"role": "user", "content": "Plan the day"}]
REPO = Path(__file__).resolve().parents[2]


def lm_for(server: ScriptedOpenAIServer, **settings: Any) -> OpenAILM:
    values: dict[str, Any] = {"model": "m", "base_url": server.base_url, "backoff": 0.01,
                              "max_retries": 3, "timeout": 10}
    values.update(settings)
    lm = make_lm(LMConfig(**values))
    assert isinstance(lm, OpenAILM)
    return lm


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COGYM_MODEL")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


# -- no openai -----------------------------------------------------------------------------------

def test_importing_and_calling_an_openai_compatible_lm_never_imports_openai() -> None:
    with ScriptedOpenAIServer(["from a fresh process"]) as server:
        script = textwrap.dedent(f"""
            import asyncio, sys
            import cogym_lab
            from cogym_lab.lm import LMConfig, make_lm
            assert "openai" not in sys.modules, "import cogym_lab"
            lm = make_lm(LMConfig(model="m", base_url={server.base_url!r}, max_retries=0))
            assert "openai" not in sys.modules, "make_lm"
            async def main():
                async with lm:
                    return (await lm.complete([{{"role": "user", "content": "hi"}}])).text
            print(asyncio.run(main()))
            print(sorted(name for name in sys.modules if name.split(".")[0] == "openai"))
        """)
        done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                              text=True, env=_child_env(), cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["from a fresh process", "[]"]


# -- the request ---------------------------------------------------------------------------------

async def test_retries_post_the_body_encoded_once(server: ScriptedOpenAIServer,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[bytes] = []
    real = openai_client.encode_body

    def counting(body: dict[str, Any]) -> bytes:
        encoded.append(real(body))
        return encoded[-1]

    monkeypatch.setattr(openai_client, "encode_body", counting)
    server.extend([Reply(status=500), Reply(status=429, headers={"retry-after-ms": "10"}),
                   "third time", "next call"])
    lm = lm_for(server)
    assert (await lm.complete(USER)).attempts == 3
    assert len(encoded) == 1  # three attempts, one encoding
    assert [r.body for r in server.chat_requests] == [json.loads(encoded[0])] * 3
    await lm.complete(USER)  # a new call: its own body
    assert len(encoded) == 2
    await lm.aclose()


async def test_extra_headers_and_query_are_request_options_not_body_fields(
        server: ScriptedOpenAIServer) -> None:
    server.add("ok")
    lm = lm_for(server, extra={"extra_headers": {"X-Team": "blue"},
                               "extra_query": {"api-version": "2024-10"},
                               "extra_body": {"top_k": 5}, "top_p": 0.5})
    await lm.complete(USER)
    (request,) = server.chat_requests
    assert {k.lower(): v for k, v in request.headers.items()}["x-team"] == "blue"
    assert "api-version=2024-10" in request.path
    assert request.body["top_k"] == 5 and request.body["top_p"] == 0.5
    assert not {"extra_headers", "extra_query", "extra_body"} & set(request.body)
    await lm.aclose()


async def test_a_redirect_is_refused_not_followed(server: ScriptedOpenAIServer) -> None:
    from cogym_lab.lm import LMError

    server.add(Reply(status=307, headers={"Location": "http://127.0.0.1:9/elsewhere"}))
    lm = lm_for(server)
    with pytest.raises(LMError) as caught:
        await lm.complete(USER)
    assert caught.value.kind == "refused" and caught.value.status == 307
    assert len(server.chat_requests) == 1
    await lm.aclose()


# -- the call log --------------------------------------------------------------------------------

def test_the_call_log_keeps_its_file_open_and_a_bounded_number_of_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calllog.close_logs()
    monkeypatch.setattr(calllog, "MAX_OPEN_LOGS", 3)
    paths = [tmp_path / f"s{n}" / "lm_calls.jsonl" for n in range(5)]
    for round_ in range(4):
        for path in paths:
            write_call(path, {"purpose": f"{path.parent.name}-{round_}"})
            assert calllog.open_logs() <= 3
    write_call(paths[0], {"purpose": "again"})
    write_call(paths[0], {"purpose": "and again"})
    assert calllog.open_logs() == 3
    for path in paths:  # closing the least recent and opening again loses nothing
        expected = [f"{path.parent.name}-{r}" for r in range(4)]
        if path == paths[0]:
            expected += ["again", "and again"]
        assert [c["purpose"] for c in read_calls(path)] == expected
    calllog.close_logs()
    assert calllog.open_logs() == 0


def test_a_killed_process_loses_no_logged_line(tmp_path: Path) -> None:
    """A process logging calls as fast as it can is killed (SIGKILL, no clean-up) once it says
    it has logged 200: every line it said it logged is in the file, whole."""
    path = tmp_path / "lm_calls.jsonl"
    script = textwrap.dedent(f"""
        import sys
        from cogym_lab.lm.calllog import write_call
        prompt = [{{"role": "user", "content": "\\u00e9t\\u00e9 " * 300}}]
        n = 0
        while True:
            write_call({str(path)!r}, {{"purpose": str(n), "messages": prompt}},
                       max_bytes=200_000, backups=50)
            print(n, flush=True)
            n += 1
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env=_child_env(), cwd=REPO)
    assert child.stdout is not None
    acknowledged = -1
    for line in child.stdout:
        acknowledged = int(line)
        if acknowledged >= 200:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert acknowledged >= 200
    purposes = [int(record["purpose"]) for record in read_calls(path)]
    assert purposes == list(range(len(purposes)))  # in order, none missing, none torn
    assert len(purposes) >= acknowledged + 1
    for file in calllog.log_files(path):  # every line of every file is whole JSON
        assert all(json.loads(line) for line in file.read_bytes().split(b"\n") if line)


# -- cleaning once per text ------------------------------------------------------------------------

_TEXT = st.lists(st.sampled_from(["a", " ", "é", "\ud83d", "\ude00", "\ud800", "\u2028",
                                  "\x00", "😀", "<", "sk-", "Bearer x"]),
                 max_size=200).map("".join)
_MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]),
                                  "content": _TEXT})


@settings(max_examples=60)
@given(st.lists(_MESSAGE, max_size=8), st.lists(_MESSAGE, max_size=4))
def test_cleaning_with_memory_gives_what_clean_gives(history: list[dict[str, str]],
                                                     new: list[dict[str, str]]) -> None:
    # Long strings too, so that the memory is used: the same string objects, sent again.
    long = [{**m, "content": m["content"] * 3 + "x" * text_memo.MIN_REMEMBERED} for m in history]
    first = text_memo.clean_messages(long)
    assert first == clean(long)
    grown = long + new
    assert text_memo.clean_messages(grown) == clean(grown)  # the old texts come from memory
    record = {"messages": grown, "completion": "\ud83d done", "usage": {"k": 1}, "n": None}
    assert text_memo.clean_messages(record) == clean(record)


def test_a_long_text_is_scanned_once_however_often_it_is_sent() -> None:
    scans: list[str] = []

    def scan(text: str) -> str:
        scans.append(text)
        return text.upper()

    memo = text_memo.StringMemo(scan, max_chars=100_000)
    long_text = "é" * 1000
    history = [long_text]
    for turn in range(20):
        history.append(f"turn {turn} " + "ü" * 300)
        assert [memo(text) for text in history] == [text.upper() for text in history]
    assert len(scans) == 21  # each text once, not once per call that resends it
    assert memo("short") == "SHORT" and memo("short") == "SHORT"  # short ones are not kept
    assert len(memo) == 21 and len(scans) == 23

    bounded = text_memo.StringMemo(scan, max_chars=1000)
    texts = [f"{n} " + "ö" * 298 for n in range(5)]
    assert [bounded(t) for t in texts] == [t.upper() for t in texts]
    assert len(bounded) == 3  # the bound on characters dropped the oldest
    scans.clear()
    assert bounded(texts[4]) == texts[4].upper() and scans == []  # kept
    assert bounded(texts[0]) == texts[0].upper() and scans == [texts[0]]  # dropped: again


async def test_an_lm_call_cleans_each_long_text_once(server: ScriptedOpenAIServer,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    scanned: list[int] = []
    real = text_memo.clean_text

    def counting(text: str) -> str:
        scanned.append(len(text))
        return real(text)

    monkeypatch.setattr(text_memo, "clean_text", counting)
    monkeypatch.setattr(text_memo, "_cleaned", text_memo.StringMemo(text_memo._clean_one))
    server.responder = lambda request: "ok"
    lm = lm_for(server)
    lm.log_to(tmp_path / "lm_calls.jsonl")
    history = [{"role": "system", "content": "Vous êtes un coéquipier. " * 40}]
    for turn in range(10):
        history.append({"role": "user", "content": f"tour {turn}: " + "déjà vu " * 50})
        await lm.complete(history)
    long_scans = [n for n in scanned if n >= text_memo.MIN_REMEMBERED]
    assert len(long_scans) == len(history)  # not 1 + 2 + ... + 11 (and not twice for the log)
    assert [r["messages"] for r in read_calls(tmp_path / "lm_calls.jsonl")][-1] == history
    await lm.aclose()


_LOG_TEXT = st.lists(st.sampled_from(["a", " ", "\n", "é", "\ud83d", "\ude00", "\ud800", "\"",
                                      "\\", "sk-", "SK-", "abcdefghijklmnop", "BeArEr ", "tok",
                                      "s3cr\"et\\key", "plainkey123", "\u2028", "\x00"]),
                     max_size=40).map("".join)


@settings(max_examples=150)
@given(st.lists(_LOG_TEXT, max_size=6), _LOG_TEXT,
       st.lists(st.sampled_from(["s3cr\"et\\key", "plainkey123", "", "tok"]), max_size=2))
def test_the_call_logs_quick_line_is_what_cleaning_and_redacting_every_string_gives(
        contents: list[str], completion: str, secrets: list[str]) -> None:
    """The log looks at a line's JSON before walking it; what it writes must be exactly what
    the walk (clean, then redact every string, keys included) would write."""
    record = {"messages": [{"role": "user", "content": c} for c in contents],
              "completion": completion, "error": None, completion: "a key", "n": 3}
    usable = calllog._usable_secrets(secrets)
    data, _line = calllog._encoded(record, usable)
    assert json.loads(data) == json.loads(calllog._dumps(calllog.redact(clean(record), usable)))


# -- each message's JSON encoded once --------------------------------------------------------------

_LOGGED_MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]),
                           "content": _LOG_TEXT}),
    st.dictionaries(_LOG_TEXT, _LOG_TEXT, max_size=3),  # hostile keys, secrets in keys too
    st.fixed_dictionaries({"role": st.just("user"),  # not text alone: encoded every time
                           "content": st.lists(st.fixed_dictionaries(
                               {"type": st.just("text"), "text": _LOG_TEXT}), max_size=2)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.none()}),
    _LOG_TEXT)


@settings(max_examples=150)
@given(st.lists(_LOGGED_MESSAGE, max_size=6), st.lists(_LOGGED_MESSAGE, min_size=1, max_size=3),
       st.dictionaries(_LOG_TEXT, _LOG_TEXT, max_size=2),
       st.lists(st.sampled_from(["s3cr\"et\\key", "plainkey123", "", "tok", "ess"]),
                max_size=2))
def test_a_line_put_together_from_kept_messages_is_the_whole_lines_encoding(
        history: list[Any], new: list[Any], extra: dict[str, str], secrets: list[str]) -> None:
    """Byte for byte what encoding the whole line gives, newline added, on a first send, a
    resend of the same history (its messages' JSON kept) and a grown one; and the same line
    as written, which cutting an oversized line starts from."""
    usable = calllog._usable_secrets(secrets)
    for messages in (history, list(history), [*history, *new]):
        line = dict.fromkeys(calllog.FIELDS) | {"messages": messages,
                                                    "completion": "ok"} | extra
        whole, whole_line = calllog._encoded(line, usable)
        data, written = calllog._line_data(line, usable)
        assert data == whole + b"\n"
        assert written() == whole_line


def test_a_resent_message_is_encoded_once_and_redacted_for_each_lms_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[Any] = []
    real = calllog._encoded

    def counting(value: Any, secrets: list[str]) -> tuple[bytes, Any]:
        if isinstance(value, dict) and "role" in value:
            encoded.append(value)
        return real(value, secrets)

    monkeypatch.setattr(calllog, "_encoded", counting)
    monkeypatch.setattr(calllog, "_message_memo", calllog._MessageMemo())
    key = "sk-live" + "Q" * 30
    history = [{"role": "system", "content": f"key {key}; say \"</script>\" \\ \ud800 ok"}]
    for turn in range(10):
        history.append({"role": "user", "content": f"turn {turn}: Bearer tok{turn}.x \u202e é"})
        write_call(tmp_path / "a" / "lm_calls.jsonl", {"messages": text_memo.clean_messages(
            history)}, [key])
    assert len(encoded) == len(history)  # not 1 + 2 + ... + 11
    # Another LM's secrets: its own encodings, redacted for them
    write_call(tmp_path / "b" / "lm_calls.jsonl", {"messages": history}, ["turn 3"])
    assert len(encoded) == 2 * len(history)
    first = read_calls(tmp_path / "a" / "lm_calls.jsonl")[-1]["messages"]
    other = read_calls(tmp_path / "b" / "lm_calls.jsonl")[-1]["messages"]
    assert first[0]["content"] == other[0]["content"] == \
        "key [REDACTED]; say \"</script>\" \\ \ufffd ok"  # a given secret; a key's shape
    assert first[4]["content"] == "turn 3: Bearer [REDACTED] \u202e é"
    assert other[4]["content"] == "[REDACTED]: Bearer [REDACTED] \u202e é"
    for messages in (first, other):
        assert not any(key in message["content"] for message in messages)
