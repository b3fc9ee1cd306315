"""What a call-log line costs as a session's history grows.

Run from the repository root (or anywhere, against an installed package)::

    python benchmarks/calllog_history.py [--calls 200] [--chars 600] [--rounds 3]

One member's session is played without any LM: each call resends the whole history so far (a
system message, then a user and an assistant message of about ``--chars`` characters added per
call), passed through the LM's own message cleaning as ``LM.complete`` does, and logged with
``write_call`` and a secret to mask, as the LMs log it. Two ways of keeping a history are timed:

* **kept**: the history's messages are kept and resent (an agent's usual history);
* **rebuilt**: every message's text is built anew for each call (equal text, new strings).

It prints this process's CPU time per logged call for the first and the last tenth of the calls
(the median of ``--rounds`` rounds), and the log's size; it checks nothing. The line itself holds
the whole prompt, so writing it grows with the history; the encoding and the secret scan of the
messages resent unchanged need not.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

SECRET = "sk-bench" + "x" * 40


def _turn(index: int, chars: int, side: str) -> str:
    line = f"{side} turn {index}: the checklist holds item {index} (\"Call the caterer\"). "
    return (line * (chars // len(line) + 1))[:chars]


def play(folder: Path, calls: int, chars: int, rebuilt: bool) -> list[float]:
    """CPU seconds of each of ``calls`` logged calls of one growing history."""
    from cogym_lab.lm.calllog import call_record, close_logs, write_call
    from cogym_lab.lm.text_memo import clean_messages

    path = folder / ("rebuilt" if rebuilt else "kept") / "lm_calls.jsonl"
    system = {"role": "system", "content": "You are a careful teammate. " * 20}
    history: list[dict[str, str]] = [system]
    costs = []
    for index in range(calls):
        history.append({"role": "user", "content": _turn(index, chars, "user")})
        if rebuilt:  # equal text in new string objects, as a prompt rendered afresh has
            sent = [{key: "".join(list(value)) for key, value in message.items()}
                    for message in history]
        else:
            sent = history
        messages = clean_messages(sent)
        started = time.process_time()
        record = call_record(purpose="bench", model="bench-model", base_url="http://127.0.0.1",
                             messages=messages, completion="ADD_ITEM(text=\"tent\")",
                             prompt_tokens=100 * index, completion_tokens=8, latency=0.5,
                             attempts=1, error=None, seed=7)
        write_call(path, record, [SECRET], max_bytes=512 * 2**20, backups=1)
        costs.append(time.process_time() - started)
        history.append({"role": "assistant", "content": _turn(index, chars, "assistant")})
    close_logs(path)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--chars", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tenth = max(1, args.calls // 10)
    print(f"CPU per logged call, {args.calls} calls of one growing history "
          f"(+2 messages of {args.chars} characters a call; median of {args.rounds} rounds)")
    for rebuilt in (False, True):
        first, last, sizes = [], [], []
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as folder:
                costs = play(Path(folder), args.calls, args.chars, rebuilt)
                sizes.extend(p.stat().st_size for p in Path(folder).rglob("*.jsonl"))
            first.append(statistics.mean(costs[:tenth]))
            last.append(statistics.mean(costs[-tenth:]))
        kind = "rebuilt" if rebuilt else "kept"
        print(f"  {kind:<8} first {tenth} calls {statistics.median(first) * 1e6:8.0f} us   "
              f"last {tenth} calls {statistics.median(last) * 1e6:8.0f} us   "
              f"log {max(sizes) / 2**20:6.1f} MiB")


if __name__ == "__main__":
    sys.exit(main())
