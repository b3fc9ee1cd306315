"""Paper search benchmark: build, size, load and query latency of the local BM25 index.

Run from the repository root::

    python benchmarks/paper_search.py [--data-dir DIR] [--cache-dir DIR] [--limit N]
                                      [--queries 200] [--rebuild] [--seed 0]

It prints figures and checks nothing. What it does:

1. **Build.** If the index of the corpus (``related_work/papers.jsonl.gz`` in the data directory,
   see ``cogym-lab data``) is not in the cache yet (or ``--rebuild`` is given), it is built in a
   separate process, timed from start to end (decompressing the corpus into the paper store,
   tokenizing, BM25 weights, saving). Otherwise the build time recorded when the cached index was
   built is shown. ``--limit N`` indexes only the first N papers.
2. **Size.** Bytes on disk of the index folder: the paper store (uncompressed corpus + offsets +
   id table) and the BM25 part, separately and together.
3. **Load.** In this process (which has not built anything): the time of
   ``BM25PaperIndex.load_or_build`` on the built index, and the resident memory (RSS) before and
   after it, and after the queries (memory-mapped pages that were read count in RSS).
4. **Queries.** ``--queries`` queries, half the titles of randomly chosen papers, half three
   consecutive words from randomly chosen abstracts; each is a full ``search(q, k=10)`` call
   (scoring, re-ranking, reading the hits, snippets). The first query is timed apart (cold
   pages), then every query is timed once. Also shown: how often a title query returns its
   paper first.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cogym_lab.datasets import data_dir as resolve_data_dir
from cogym_lab.envs.related_work.corpus import corpus_files
from cogym_lab.envs.related_work.search import BM25PaperIndex, normalize_title
from cogym_lab.envs.related_work.store import cache_folder, default_cache_dir

TARGET_MS = 50.0


def memory_mb() -> dict[str, float]:
    """This process's resident memory in MB: ``rss`` and, on Linux, ``anon`` (private heap) and
    ``file`` (mapped file pages: the memory-mapped index, which the kernel can drop and reread)."""
    fields = {"VmRSS:": "rss", "RssAnon:": "anon", "RssFile:": "file"}
    found: dict[str, float] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                name = line.split(maxsplit=1)[0] if line.strip() else ""
                if name in fields:
                    found[fields[name]] = int(line.split()[1]) / 1024
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        found["rss"] = peak / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return found


def describe(memory: dict[str, float]) -> str:
    text = f"{memory['rss']:.0f} MB"
    if "anon" in memory and "file" in memory:
        text += f" (heap {memory['anon']:.0f} + mapped files {memory['file']:.0f})"
    return text


def folder_mb(folder: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(folder):
        total += sum((Path(root) / name).stat().st_size for name in files)
    return total / 1e6


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def build_in_child(args: argparse.Namespace) -> float:
    command = [sys.executable, __file__, "--build-only", "--data-dir", str(args.data_dir),
               "--cache-dir", str(args.cache_dir)]
    if args.limit is not None:
        command += ["--limit", str(args.limit)]
    started = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - started


def make_queries(index: BM25PaperIndex, count: int, seed: int) -> list[tuple[str, str, str]]:
    """(kind, query, expected id for title queries else "")."""
    rng = random.Random(seed)
    total = len(index)
    queries: list[tuple[str, str, str]] = []
    while len(queries) < count // 2:
        paper = index.store.paper_at(rng.randrange(total))
        if paper.title.strip():
            queries.append(("title", paper.title, paper.id))
    while len(queries) < count:
        words = re.findall(r"[A-Za-z][A-Za-z-]+", index.store.paper_at(rng.randrange(total)).abstract)
        if len(words) >= 3:
            start = rng.randrange(len(words) - 2)
            queries.append(("phrase", " ".join(words[start:start + 3]), ""))
    rng.shuffle(queries)
    return queries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None, help="the data directory (default: "
                        "COGYM_DATA, else the user cache)")
    parser.add_argument("--cache-dir", default=None, help="where the index is cached (default: "
                        "the user cache directory)")
    parser.add_argument("--limit", type=int, default=None, help="index only the first N papers")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rebuild", action="store_true", help="delete the cached index first")
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.data_dir = resolve_data_dir(args.data_dir)
    args.cache_dir = Path(args.cache_dir).resolve() if args.cache_dir else default_cache_dir()

    if args.build_only:
        BM25PaperIndex.load_or_build(args.data_dir, args.cache_dir, limit=args.limit,
                                     progress=True)
        return 0

    files = corpus_files(args.data_dir)
    folder = cache_folder(files, args.cache_dir, args.limit)
    size = sum(f.stat().st_size for f in files) / 1e6
    print(f"corpus: {' + '.join(f.name for f in files)} ({size:.1f} MB compressed), "
          f"limit: {args.limit or 'none'}")
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    if args.rebuild and folder.exists():
        shutil.rmtree(folder)
    if BM25PaperIndex.is_built(folder):
        build_note = "cached"
        build_seconds = None
    else:
        build_note = "built now"
        build_seconds = build_in_child(args)

    rss_before = memory_mb()
    started = time.perf_counter()
    index = BM25PaperIndex.load_or_build(args.data_dir, args.cache_dir, limit=args.limit,
                                         progress=False)
    load_seconds = time.perf_counter() - started
    rss_loaded = memory_mb()
    assert not index.built

    queries = make_queries(index, args.queries, args.seed)
    started = time.perf_counter()
    index.search(queries[0][1])
    first_ms = (time.perf_counter() - started) * 1000
    latencies: list[float] = []
    title_first = title_same = title_total = 0
    for kind, query, expected in queries:
        started = time.perf_counter()
        hits = index.search(query, k=10)
        latencies.append((time.perf_counter() - started) * 1000)
        if kind == "title":
            title_total += 1
            title_first += bool(hits) and hits[0].paper.id == expected
            title_same += bool(hits) and (normalize_title(hits[0].paper.title)
                                          == normalize_title(query))
    rss_after = memory_mb()

    store_mb = folder_mb(folder / "store")
    bm25_mb = folder_mb(folder / "bm25")
    print()
    print(f"papers indexed:      {len(index):,} ({index.meta.get('terms', 0):,} terms)")
    if build_seconds is not None:
        print(f"build time:          {build_seconds:.1f} s (built now, in a child process)")
    else:
        print(f"build time:          {index.build_seconds:.1f} s (recorded when the cached "
              f"index was built; --rebuild to measure again)")
    print(f"index size on disk:  {store_mb + bm25_mb:.1f} MB = paper store {store_mb:.1f} MB "
          f"+ BM25 {bm25_mb:.1f} MB")
    print(f"load time:           {load_seconds * 1000:.0f} ms")
    print(f"RSS before load:     {describe(rss_before)}")
    print(f"RSS after load:      {describe(rss_loaded)}")
    print(f"RSS after queries:   {describe(rss_after)}")
    print(f"first query (cold):  {first_ms:.1f} ms")
    print(f"query latency (k=10, {len(latencies)} queries: {title_total} titles, "
          f"{len(latencies) - title_total} 3-word phrases):")
    print(f"  p50 {percentile(latencies, 0.50):.1f} ms   p90 {percentile(latencies, 0.90):.1f} ms"
          f"   p99 {percentile(latencies, 0.99):.1f} ms   max {max(latencies):.1f} ms   "
          f"mean {statistics.fmean(latencies):.1f} ms   (target < {TARGET_MS:.0f} ms)")
    for kind in ("title", "phrase"):
        part = [lat for (k, _q, _e), lat in zip(queries, latencies, strict=True) if k == kind]
        if part:
            print(f"  {kind + 's:':8} p50 {percentile(part, 0.5):.1f} ms   "
                  f"p99 {percentile(part, 0.99):.1f} ms")
    if title_total:
        print(f"title queries answered with their paper first: {title_first}/{title_total} "
              f"(with a paper of that exact title first: {title_same}/{title_total})")
    print(f"({build_note}; index folder {folder.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
