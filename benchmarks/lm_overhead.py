"""What cogym_lab's LM costs on top of the HTTP request itself, side by side in one run.

Run from the repository root (or anywhere, against an installed package)::

    python benchmarks/lm_overhead.py [--requests 2000] [--concurrency 32] [--messages 12]
                                     [--starts 5]

It starts a loopback OpenAI-compatible server in a process of its own (so that its CPU is not
counted), then prints and checks nothing:

1. **CPU per request**: this process's CPU time (user + system) per chat request, for
   ``make_lm(...).complete`` (without and with its call log) and for a bare ``aiohttp`` post of
   the same body (encoded per request, the reply parsed as JSON), each over ``--requests``
   requests kept ``--concurrency`` in flight. The three take turns for three rounds; the median
   round is shown.
2. **First completion of a fresh process**: the wall time from starting a Python process to its
   first completion, for a script that imports cogym_lab, makes an LM and calls it, and for a
   bare script that imports aiohttp and posts; the median of ``--starts`` runs each. The
   cogym_lab child also says whether it imported ``openai`` (it should not).

The targets (issue 38): per-request CPU within 2x bare, first completion within 2x bare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = "bench-model"
REPLY = {"id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": MODEL,
         "choices": [{"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant",
                                  "content": "ADD_ITEM(text=\"Book the venue for Friday\")"}}],
         "usage": {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912}}


# -- the loopback server (a process of its own) ---------------------------------------------------

def serve() -> None:
    """An OpenAI-compatible chat endpoint on a free loopback port; prints the port, serves until
    killed."""
    from aiohttp import web

    payload = json.dumps(REPLY).encode()

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=payload, content_type="application/json")

    async def main() -> None:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(port, flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None
    port = int(process.stdout.readline())
    return process, f"http://127.0.0.1:{port}/v1"


def prompt(messages: int) -> list[dict[str, str]]:
    """A prompt like an agent's: a system message and a history of turns, about 4 KB."""
    history = [{"role": "system", "content": "You are a careful teammate working on a shared "
                "checklist. Answer with one action. " * 4}]
    for index in range(messages - 1):
        history.append({"role": "user" if index % 2 == 0 else "assistant",
                        "content": f"Turn {index}: the checklist now holds item {index} "
                                   "(\"Call the caterer about the menu\") and a note. " * 3})
    return history


# -- CPU per request -------------------------------------------------------------------------------

async def _keep_in_flight(call, requests: int, concurrency: int) -> float:
    """CPU seconds per request for ``requests`` calls of ``call()``, ``concurrency`` at a time."""
    left = requests

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await call()

    started = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return (time.process_time() - started) / requests


async def cpu_per_request(base_url: str, requests: int, concurrency: int,
                          messages: list[dict[str, str]]) -> dict[str, float]:
    import aiohttp

    from cogym_lab.lm import LMConfig, make_lm

    config = LMConfig(model=MODEL, base_url=base_url, timeout=30, deadline=60, max_retries=0)
    lm = make_lm(config)
    logged = make_lm(config)
    folder = tempfile.TemporaryDirectory()
    logged.log_to(Path(folder.name) / "lm_calls.jsonl")
    url = base_url + "/chat/completions"
    headers = {"Authorization": "Bearer not-needed", "Content-Type": "application/json"}
    body = {"model": MODEL, "messages": messages, "temperature": 0.0, "max_tokens": 1024}

    async with aiohttp.ClientSession(headers=headers) as session:
        async def bare() -> None:
            async with session.post(url, data=json.dumps(body).encode()) as response:
                reply = json.loads(await response.read())
                assert reply["choices"][0]["message"]["content"]

        async def cogym() -> None:
            await lm.complete(messages, purpose="bench")

        async def cogym_logged() -> None:
            await logged.complete(messages, purpose="bench")

        kinds = {"bare aiohttp post": bare, "cogym_lab LM": cogym,
                 "cogym_lab LM + call log": cogym_logged}
        for call in kinds.values():  # warm: connections open, caches filled
            await _keep_in_flight(call, concurrency * 4, concurrency)
        rounds: dict[str, list[float]] = {name: [] for name in kinds}
        for _ in range(3):
            for name, call in kinds.items():
                rounds[name].append(await _keep_in_flight(call, requests, concurrency))
    await lm.aclose()
    await logged.aclose()
    folder.cleanup()
    return {name: statistics.median(values) for name, values in rounds.items()}


# -- first completion of a fresh process ----------------------------------------------------------

COGYM_CHILD = """
import asyncio, sys, time
from cogym_lab.lm import LMConfig, make_lm
async def main():
    lm = make_lm(LMConfig(model={model!r}, base_url={base_url!r}, max_retries=0))
    text = (await lm.complete([{{"role": "user", "content": "hello"}}])).text
    assert text
    print("openai imported:", "openai" in sys.modules, flush=True)
    await lm.aclose()
asyncio.run(main())
"""

BARE_CHILD = """
import asyncio, json, sys
import aiohttp
async def main():
    body = json.dumps({{"model": {model!r}, "messages": [{{"role": "user", "content": "hello"}}],
                       "temperature": 0.0}}).encode()
    headers = {{"Authorization": "Bearer not-needed", "Content-Type": "application/json"}}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.post({base_url!r} + "/chat/completions", data=body) as response:
            text = json.loads(await response.read())["choices"][0]["message"]["content"]
    assert text
    print("openai imported:", "openai" in sys.modules, flush=True)
asyncio.run(main())
"""


def first_completion(script: str, where: str) -> tuple[float, str]:
    """Seconds from starting a fresh Python to its first completion's line, and that line.
    The child runs in ``where`` (not the current folder, which ``-c`` would put first on its
    path) and imports the cogym_lab this process imported."""
    import cogym_lab

    package_root = str(Path(cogym_lab.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                               cwd=where, env={**os.environ, "PYTHONPATH": path})
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    elapsed = time.perf_counter() - started
    process.wait()
    if process.returncode != 0 or not line:
        raise SystemExit(f"the child failed (exit {process.returncode})")
    return elapsed, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--messages", type=int, default=12)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    server, base_url = start_server()
    try:
        messages = prompt(args.messages)
        size = len(json.dumps(messages))
        print(f"CPU per chat request ({args.requests} requests, {args.concurrency} in flight, "
              f"{len(messages)} messages, {size / 1024:.1f} KiB of prompt; median of 3 rounds)")
        cpu = asyncio.run(cpu_per_request(base_url, args.requests, args.concurrency, messages))
        bare = cpu["bare aiohttp post"]
        for name, seconds in cpu.items():
            print(f"  {name:<26} {seconds * 1e6:8.0f} us   {seconds / bare:5.2f}x bare")

        print(f"\nFresh process to its first completion (median of {args.starts})")
        scripts = {"bare aiohttp script": BARE_CHILD, "cogym_lab make_lm().complete": COGYM_CHILD}
        times: dict[str, list[float]] = {name: [] for name in scripts}
        notes: dict[str, str] = {}
        with tempfile.TemporaryDirectory() as where:
            for _ in range(args.starts):  # taking turns: a busy moment hurts both alike
                for name, script in scripts.items():
                    elapsed, notes[name] = first_completion(
                        script.format(model=MODEL, base_url=base_url), where)
                    times[name].append(elapsed)
        bare_start = statistics.median(times["bare aiohttp script"])
        for name, values in times.items():
            median = statistics.median(values)
            print(f"  {name:<30} {median:6.3f} s   {median / bare_start:5.2f}x bare   "
                  f"({notes[name]})")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
