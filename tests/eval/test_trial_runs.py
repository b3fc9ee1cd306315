"""Repeated trials in the batch runner: each trial's seeds reach the HTTP request our real LM
client posts and every call log line, trials resume one by one, ``rerun`` keeps what it
replaces, and the report counts trials and pairs them by instance."""

from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.eval import report, run
from cogym_lab.eval.batch.manifest import RUN_FILE, read_run
from cogym_lab.eval.batch.seeds import ENV, trial_seed
from cogym_lab.eval.batch.sessions import REPLACED_DIR, session_dir_name
from cogym_lab.nodes.results import read_session, update_session
from cogym_lab.records.trajectory import find_sessions, load_session
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.lm_scripts import TodoRolePlay
from tests.support.trajectories import add, write_session

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]
MODELS = {"agent": "agent-lm", "user": "user-lm"}
FINGERPRINT = "fp_scripted_42"


class FingerprintedPlay(TodoRolePlay):
    """The todo role play, each reply saying which backend answered (a system fingerprint)."""

    def __call__(self, body):
        reply = super().__call__(body)
        return Reply(text=reply, system_fingerprint=FINGERPRINT) if isinstance(reply, str) \
            else reply


def _seeds_sent(bodies: list[dict]) -> set[tuple[str, int]]:
    return {(body["model"], body["seed"]) for body in bodies}


def _collaborative(out: Path, server: ScriptedOpenAIServer, **options) -> object:
    return run("todo", "collaborative", options.pop("instances", "0"), out=out,
               models=MODELS, base_urls=server.base_url, idle_seconds=1, timeout=60,
               progress=False, **options)


def test_each_trial_seeds_every_lm_call_and_a_rerun_gets_the_same_seeds(tmp_path):
    out = tmp_path / "run"
    with ScriptedOpenAIServer(responder=FingerprintedPlay()) as server:
        summary = _collaborative(out, server, trials=2)
        bodies = server.bodies
    assert summary.counts.finished == 2 and summary.trials == 2
    assert [(s.instance, s.trial, s.directory) for s in summary.sessions] == [
        (0, 0, "000"), (0, 1, "000-t1")]
    expected = {trial: {role: trial_seed(0, trial, role) for role in ("agent", "user", ENV)}
                for trial in (0, 1)}
    # the two trials differ in every seed: the LMs' and the environment's
    assert all(expected[0][role] != expected[1][role] for role in expected[0])
    # every request our real LM client posted carried its member's seed of its trial
    assert all("seed" in body for body in bodies)
    assert _seeds_sent(bodies) == {(f"{role}-lm", expected[t][role])
                                   for t in (0, 1) for role in ("agent", "user")}
    for trial, name in ((0, "000"), (1, "000-t1")):
        meta = read_session(out / name)
        assert meta["batch"] == {"run": "run", "instance": 0, "trial": trial,
                                 "seeds": expected[trial]}
        record = load_session(out / name)
        assert (record.trial, record.seeds) == (trial, expected[trial])
        assert meta["config"]["seed"] == expected[trial][ENV]  # the environment's reset
        assert meta["spec"]["lm"]["agent"]["seed"] == expected[trial]["agent"]
        for role in ("agent", "user"):
            calls = [json.loads(line) for line in
                     (out / name / role / "lm_calls.jsonl").read_text().splitlines()]
            assert calls and all(c["seed"] == expected[trial][role] for c in calls)
            assert all(c["system_fingerprint"] == FINGERPRINT for c in calls)

    # Rerun trial 1 on purpose: its old folder is kept aside, and it runs with its own seeds.
    first_id = read_session(out / "000-t1")["session_id"]
    with ScriptedOpenAIServer(responder=FingerprintedPlay()) as server:
        again = _collaborative(out, server, trials=2, rerun=[(0, 1)])
        rerun_bodies = server.bodies
    assert (again.counts.skipped, again.invocations[-1].ran) == (1, 1)
    assert _seeds_sent(rerun_bodies) == {(f"{role}-lm", expected[1][role])
                                         for role in ("agent", "user")}
    kept = out / REPLACED_DIR / "000-t1-1"
    assert read_session(kept)["session_id"] == first_id
    assert read_session(out / "000-t1")["session_id"] != first_id
    assert read_session(out / "000-t1")["batch"]["seeds"] == expected[1]
    # the report reads the run's two sessions, not the one set aside
    assert sorted(p.name for p in find_sessions([out])) == ["000", "000-t1"]


def test_a_seed_the_caller_fixed_holds_for_every_trial(tmp_path):
    with ScriptedOpenAIServer(responder=TodoRolePlay()) as server:
        summary = _collaborative(tmp_path / "run", server, trials=2,
                                 lm_arguments={"agent": {"seed": 7}}, session={"seed": 11})
        bodies = server.bodies
    assert summary.counts.finished == 2
    assert {body["seed"] for body in bodies if body["model"] == "agent-lm"} == {7}
    assert {body["seed"] for body in bodies if body["model"] == "user-lm"} == {
        trial_seed(0, 0, "user"), trial_seed(0, 1, "user")}  # not fixed: one per trial
    for name in ("000", "000-t1"):
        seeds = read_session(tmp_path / "run" / name)["batch"]["seeds"]
        assert seeds["agent"] == 7 and seeds[ENV] == 11


async def test_the_local_provider_samples_with_the_seed(tmp_path):
    """A GGUF model run by llama.cpp: each completion is asked with the config's seed, so two
    LMs with one seed sample alike at temperature 1, and the call log records it."""
    from cogym_lab.lm import LMConfig, make_lm
    from cogym_lab.lm.calllog import read_calls
    from tests.lm.test_lm import USER, write_tiny_llama_gguf

    model = write_tiny_llama_gguf(tmp_path / "tiny.gguf")
    texts, asked = [], []
    for number in range(2):
        lm = make_lm(LMConfig(provider="local", model=str(model), temperature=1.0, seed=1234,
                              max_tokens=8), member="agent")
        lm.log_to(tmp_path / f"calls-{number}.jsonl")
        llama, _ = lm._model()  # loaded here, so its calls can be watched
        real = llama.create_chat_completion

        def watched(*args, real=real, **kwargs):
            asked.append(kwargs.get("seed"))
            return real(*args, **kwargs)

        llama.create_chat_completion = watched
        texts.append((await lm.complete(USER)).text)
        await lm.aclose()
        (record,) = read_calls(tmp_path / f"calls-{number}.jsonl")
        assert record["seed"] == 1234 and "system_fingerprint" not in record
    assert asked == [1234, 1234] and texts[0] == texts[1]


def test_trials_resume_one_by_one(tmp_path):
    out, bar = tmp_path / "run", io.StringIO()
    summary = run("todo", "example", "0:2", out=out, idle_seconds=0.3, trials=3, progress=bar)
    assert summary.counts.finished == 6 and summary.status == "finished"
    assert "6/6" in bar.getvalue() and "3 trials" in bar.getvalue()  # the bar counts sessions
    assert sorted(p.name for p in out.iterdir()) == [
        "000", "000-t1", "000-t2", "001", "001-t1", "001-t2", RUN_FILE]
    written = json.loads((out / RUN_FILE).read_text())
    assert [(s["instance"], s["trial"]) for s in written["sessions"]] == [
        (i, t) for i in (0, 1) for t in range(3)]
    assert written["instances"] == [0, 1] and written["trials"] == 3
    # the env seed of each session is its own (the example team has no LM)
    assert read_session(out / "001-t2")["batch"]["seeds"] == {ENV: trial_seed(1, 2, ENV)}

    # One trial lost, one cut short: only those two run again.
    shutil.rmtree(out / "000-t1")
    update_session(out / "001-t2", status="running", ended_at=None)
    ids = {name: read_session(out / name)["session_id"] for name in ("000", "001")}
    again = run("todo", "example", "0:2", out=out, idle_seconds=0.3, trials=3, progress=False)
    assert (again.counts.skipped, again.invocations[-1].ran) == (4, 2)
    assert again.counts.finished == 6
    assert {name: read_session(out / name)["session_id"] for name in ids} == ids
    assert read_session(out / "001-t2")["status"] == "finished"
    assert read_run(out) == again

    # rerun: a finished trial redone (its folder kept aside), and a trial beyond the three
    rerun = run("todo", "example", "0:2", out=out, idle_seconds=0.3, trials=3,
                rerun=[(0, 0), (1, 3)], progress=False)
    assert rerun.invocations[-1].ran == 2 and rerun.counts.total == 7 and rerun.trials == 4
    assert read_session(out / REPLACED_DIR / "000-1")["session_id"] == ids["000"]
    assert read_session(out / "000")["session_id"] != ids["000"]
    assert read_session(out / session_dir_name(1, 3))["batch"]["trial"] == 3
    with pytest.raises(ValueError, match=r"\(instance, trial\) pairs"):
        run("todo", "example", "0", out=out, rerun=[(0, -1)], progress=False)
    with pytest.raises(ValueError, match="trials must be at least 1"):
        run("todo", "example", "0", out=out, trials=0, progress=False)


def test_a_run_from_before_trials_resumes_as_trial_zero(tmp_path):
    out = tmp_path / "run"
    run("todo", "example", "0:2", out=out, idle_seconds=0.3, progress=False)
    # as a run written before trials: no trial in run.json, none in session.json
    written = json.loads((out / RUN_FILE).read_text())
    written.pop("trials")
    for entry in written["sessions"]:
        entry.pop("trial")
    (out / RUN_FILE).write_text(json.dumps(written))
    for name in ("000", "001"):
        batch = read_session(out / name)["batch"]
        update_session(out / name, batch={"run": batch["run"], "instance": batch["instance"]})
        assert load_session(out / name).trial == 0 and load_session(out / name).seeds == {}
    assert [s.trial for s in read_run(out).sessions] == [0, 0]
    more = run("todo", "example", "0:2", out=out, idle_seconds=0.3, trials=2, progress=False)
    assert (more.counts.skipped, more.invocations[-1].ran, more.counts.total) == (2, 2, 4)


def test_eval_run_takes_trials(tmp_path):
    out = tmp_path / "run"
    ran = CliRunner().invoke(main, ["eval", "run", "--task", "todo", "--team", "example",
                                    "--instances", "0", "--trials", "2", "--out", str(out),
                                    "--idle-seconds", "0.3", "--no-progress"])
    assert ran.exit_code == 0, ran.output
    assert "2/2 sessions finished" in ran.output
    assert (out / "000-t1" / "session.json").is_file()
    shown = CliRunner().invoke(main, ["eval", "report", str(out), "--success-threshold", "0.9"])
    assert shown.exit_code == 0, shown.output
    assert "Repeated trials" in shown.output and "pass^2" in shown.output


# -- the report over trials, on hand-built sessions ----------------------------------------------

CAMPING = {"trip": "camping", "min_items": 4, "must_have": ["rain jacket", "headlamp"]}
BEACH = {"trip": "beach", "min_items": 4, "must_have": ["sunscreen", "hat"]}
# Each grade is (share of must-haves listed + min(items, 4) / 4) / 2:
LISTS = {
    1.0: ["rain jacket", "headlamp", "tent", "map"],   # camping: (1 + 1) / 2
    0.75: ["rain jacket", "headlamp"],                 # camping: (1 + 1/2) / 2
    0.5: ["rain jacket", "tent"],                      # camping: (1/2 + 1/2) / 2
    0.25: ["tent", "map"],                             # either trip: (0 + 1/2) / 2
    "beach 1.0": ["sunscreen", "hat", "towel", "umbrella"],
}


def _trial(folder: Path, name: str, args: dict, items: list[str], trial: int,
           agent_type: str) -> None:
    directory = write_session(folder / name, [("agent", add(item)) for item in items],
                              env_args=args, agent_type=agent_type)
    update_session(directory, batch={"run": folder.name, "instance": 0, "trial": trial})


def test_the_report_averages_each_instance_over_its_trials(tmp_path):
    collaborative, autonomous = tmp_path / "collab", tmp_path / "auto"
    # collaborative: camping 1.0, 0.5, 0.75 (mean 0.75); beach 0.25, 1.0, 0.25 (mean 0.5)
    for trial, grade in enumerate((1.0, 0.5, 0.75)):
        _trial(collaborative, f"camping-{trial}", CAMPING, LISTS[grade], trial, "collaborative")
    for trial, grade in enumerate((0.25, "beach 1.0", 0.25)):
        _trial(collaborative, f"beach-{trial}", BEACH, LISTS[grade], trial, "collaborative")
    # the autonomous baseline: camping 0.5, 0.25, 0.75 (mean 0.5); beach once, 0.25
    for trial, grade in enumerate((0.5, 0.25, 0.75)):
        _trial(autonomous, f"camping-{trial}", CAMPING, LISTS[grade], trial, "autonomous")
    _trial(autonomous, "beach-0", BEACH, LISTS[0.25], 0, "autonomous")

    result = report([collaborative, autonomous], effort=False, failures=False)
    summary = result.tables["summary"].set_index("agent_type")
    assert summary.loc["collaborative", "sessions"] == 6  # every trial is a session
    assert summary.loc["autonomous", "sessions"] == 4
    assert summary.loc["collaborative", "performance"] == pytest.approx(3.75 / 6)

    (comparison,) = result.tables["comparison"].to_dict("records")
    # Trial t pairs with the baseline's trial t (beach: with its only one); each instance is
    # averaged first: camping 0.75 vs 0.5, beach 0.5 vs 0.25 -> two pairs, differences 0.25
    assert (comparison["pairs"], comparison["instances"]) == (6, 2)
    assert comparison["graded_pairs"] == 2
    assert comparison["mean_difference"] == pytest.approx(0.25)

    trials = result.tables["trials"].set_index("agent_type")
    row = trials.loc["collaborative"]
    assert (row["sessions"], row["instances"], row["trials"]) == (6, 2, 3)
    # successes (>= 0.8): camping 1 of 3, beach 1 of 3: pass^1 = 1/3, pass^2 = pass^3 = 0
    assert (row["pass^1"], row["pass^2"], row["pass^3"]) == pytest.approx((1 / 3, 0, 0))
    # instance means 0.75 and 0.5: mean 0.625; the bootstrap interval over two instances spans
    # them (Student's t reached 0.625 + 1.588, past the score's maximum of 1)
    assert row["mean"] == pytest.approx(0.625)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.5, 0.75))
    # camping: deviations 0.25, -0.25, 0 -> 0.125 / 2 = 0.0625; beach: -0.25, 0.5, -0.25 ->
    # 0.375 / 2 = 0.1875; within = 0.125; between: var(0.75, 0.5) = 0.125^2 * 2 = 0.03125
    assert row["within_variance"] == pytest.approx(0.125)
    assert row["between_variance"] == pytest.approx(0.03125)
    assert "judge_share" not in trials.columns  # no noise study was made
    # the baseline ran beach once: its pass^k stops at k = 1
    assert math.isnan(trials.loc["autonomous"].get("pass^2", math.nan))
    text = result.to_text()
    assert "Repeated trials" in text and "pass^3" in text
    # at a threshold of 1.0 only full marks succeed: still camping's 1.0 and beach's 1.0
    strict = report([collaborative], effort=False, failures=False, success_threshold=1.0)
    assert strict.tables["trials"].iloc[0]["pass^1"] == pytest.approx(1 / 3)


def test_a_report_without_repeated_trials_has_no_trials_table(tmp_path):
    _trial(tmp_path / "once", "camping", CAMPING, LISTS[1.0], 0, "collaborative")
    result = report([tmp_path / "once"], effort=False, failures=False)
    assert result.tables["trials"].empty and "Repeated trials" not in result.to_text()
