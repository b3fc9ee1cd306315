"""ProgressMeter: the share done over weighted phases, the time left, how often it reports, and
`counting`, which gives code either a meter's phase or a tqdm bar."""

from __future__ import annotations

import threading

from cogym_lab.core.progress import Progress, ProgressMeter, counting


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_fraction_follows_the_phases_by_their_shares_and_the_time_left_follows_it() -> None:
    clock, seen = FakeClock(), []
    meter = ProgressMeter("Building", {"read": 1.0, "index": 3.0}, listener=seen.append,
                          interval=0.0, clock=clock)
    with meter.phase("read", total=10) as advance:
        clock.now += 1
        advance(5)
        assert meter.fraction == 0.125  # half of a quarter
        assert seen[-1].seconds_left == 7.0  # 1 s for 12.5%: 7 s for the rest
        advance(5)
    assert meter.fraction == 0.25
    with meter.phase("index"):  # no count: the share jumps only when the phase ends
        assert meter.fraction == 0.25
    meter.finish()
    assert seen[-1].fraction == 1.0 and seen[-1].seconds_left == 0.0
    assert [p.phase for p in seen][:2] == ["read", "read"]
    assert all(isinstance(p, Progress) for p in seen)


def test_no_estimate_is_made_from_almost_nothing_and_reports_are_throttled() -> None:
    clock, seen = FakeClock(), []
    meter = ProgressMeter("Building", {"read": 1.0}, listener=seen.append, interval=1.0,
                          clock=clock)
    with meter.phase("read", total=1000) as advance:
        advance(1)  # 0.1%: too little to estimate from, and within the interval of the start
        assert len(seen) == 1 and seen[0].seconds_left is None
        clock.now += 1.5
        advance(1)
        assert len(seen) == 2 and seen[1].seconds_left is None  # still under 2%
        clock.now += 1.5
        advance(98)
    assert seen[-1].seconds_left is not None


def test_a_meter_counts_from_many_threads() -> None:
    meter = ProgressMeter("Building", {"work": 1.0})
    with meter.phase("work", total=8000) as advance:
        threads = [threading.Thread(target=lambda: [advance(1) for _ in range(1000)])
                   for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert meter.fraction == 1.0


def test_counting_reports_to_a_meter_or_draws_a_bar(capsys) -> None:
    seen: list[Progress] = []
    meter = ProgressMeter("Building", {"read": 1.0}, listener=seen.append, interval=0.0)
    with counting(meter, "read", 4) as advance:
        advance(2)
    assert seen[-1].phase == "read" and seen[-1].fraction == 0.5
    with counting(True, "reading", 3, " papers") as advance:
        advance(3)
    assert "reading" in capsys.readouterr().err
    with counting(False, "quiet", 3) as advance:
        advance(3)
    assert capsys.readouterr().err == ""
