"""Kills and concurrency never lose a run or a user's file: two identical runs share one --out (the second waits,
then reuses), a live run's staging folder is never taken for debris, a SIGKILLed process's leftovers are cleaned,
--force or a publish cut between its two renames is recovered, and image checkpoints in a user's folder touch only
featlab's own files. Experiments are replaced by instant stand-ins where training is not the point."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import featlab
import featlab.runs.store as store
import featlab.train.image_trainer as image_trainer
from featlab.runs.registry import get_experiment

pytestmark = pytest.mark.usefixtures("one_thread")

KW = dict(seeds=1, k=4, d=32, m=2, n=80, n_test=40, T=10)
IMG = dict(seeds=1, methods=["erm"], epochs=2, width=4, batch_size=300)


def stand_in(monkeypatch, fn):
    monkeypatch.setattr(get_experiment("fa-synthetic"), "fn", fn)


def leftovers(out, experiment="fa-synthetic"):
    return sorted(p.name for p in (out / experiment).iterdir() if p.name.startswith("."))


def wait_for(cond, what, timeout=20.0):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def in_thread(results, key, **kw):
    def target():
        try:
            results[key] = featlab.run("fa-synthetic", **kw)
        except BaseException as e:  # reported by the test
            results[key] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t


# ------------------------------------------------------------------------------------------ concurrency
def test_second_identical_run_waits_then_reuses_the_first(out, monkeypatch, capsys):
    started, release, calls = threading.Event(), threading.Event(), []

    def slow(ctx):
        calls.append(ctx.dir)
        started.set()
        assert release.wait(20)
        ctx.metric("x", 1.0)

    stand_in(monkeypatch, slow)
    results = {}
    a = in_thread(results, "a", out=out, **KW)
    assert started.wait(20)
    b = in_thread(results, "b", out=out, **KW)
    seen = []
    wait_for(lambda: seen.append(capsys.readouterr().err) or "waiting for it to finish" in "".join(seen),
             "the second run to wait")
    assert calls and len(calls) == 1 and calls[0].exists()  # the first one's staging folder is untouched
    release.set()
    a.join(20), b.join(20)
    ra, rb = results["a"], results["b"]
    assert ra.ok and not ra.skipped and rb.skipped and rb.dir == ra.dir and rb.summary == ra.summary
    assert len(calls) == 1 and leftovers(out) == []  # trained once; no staging, no lock file left


def test_a_live_runs_staging_is_not_taken_for_debris(out, monkeypatch):
    started, release = threading.Event(), threading.Event()

    def fn(ctx):
        if ctx.cfg.seed == 0:  # the long run
            (ctx.dir / "figures" / "live.png").write_text("being written")
            started.set()
            assert release.wait(20)
        ctx.metric("x", float(ctx.cfg.seed))

    stand_in(monkeypatch, fn)
    results = {}
    a = in_thread(results, "a", out=out, **KW)
    assert started.wait(20)
    other = featlab.run("fa-synthetic", out=out, **{**KW, "seed": 5})  # cleans debris of unlocked run ids only
    assert other.ok
    live = [p for p in (out / "fa-synthetic").glob(".*.partial-*")]
    assert len(live) == 1 and (live[0] / "figures" / "live.png").is_file()
    release.set()
    a.join(20)
    assert results["a"].ok and (results["a"].dir / "figures" / "live.png").is_file()
    assert leftovers(out) == []


CHILD = textwrap.dedent("""
    import sys, time, featlab
    from featlab.runs.registry import get_experiment

    def hang(ctx):
        (ctx.dir / "started").write_text("1")
        time.sleep(120)

    get_experiment("fa-synthetic").fn = hang
    featlab.run("fa-synthetic", out=sys.argv[1], quiet=True, **eval(sys.argv[2]))
""")


def test_sigkilled_process_leaves_nothing_that_blocks_or_survives(out, monkeypatch):
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(out), repr(KW)], stderr=subprocess.PIPE)
    try:
        wait_for(lambda: any((out / "fa-synthetic").glob(".*.partial-*/started")), "the child to start", 60)
        child.send_signal(signal.SIGKILL)
        child.wait(20)
    finally:
        if child.poll() is None:
            child.kill()
    assert [p for p in (out / "fa-synthetic").iterdir() if not p.name.startswith(".")] == []  # nothing looks done
    stand_in(monkeypatch, lambda ctx: ctx.metric("x", 1.0))
    other = featlab.run("fa-synthetic", out=out, **{**KW, "seed": 3})  # another run id cleans the dead one's debris
    assert other.ok and leftovers(out) == []
    rec = featlab.run("fa-synthetic", out=out, **KW)  # the kernel released the dead process's lock: no waiting
    assert rec.ok and not rec.skipped and leftovers(out) == []


# ------------------------------------------------------------------------------------------ --force and publish
def test_force_interrupted_between_renames_puts_the_old_run_back(out, monkeypatch):
    stand_in(monkeypatch, lambda ctx: ctx.metric("x", 1.0))
    first = featlab.run("fa-synthetic", out=out, **KW)
    stand_in(monkeypatch, lambda ctx: ctx.metric("x", 2.0))
    real = os.replace

    def cut(src, dst):
        if ".partial-" in str(src) and str(dst) == str(first.dir):
            raise KeyboardInterrupt  # Ctrl-C after the old run was moved aside, before the new one is in place
        real(src, dst)

    monkeypatch.setattr(store.os, "replace", cut)
    with pytest.raises(KeyboardInterrupt):
        featlab.run("fa-synthetic", out=out, force=True, **KW)
    monkeypatch.setattr(store.os, "replace", real)
    assert json.loads((first.dir / "summary.json").read_text())["metrics"] == {"x": 1.0}
    assert leftovers(out) == []
    again = featlab.run("fa-synthetic", out=out, **KW)
    assert again.skipped and again.summary["metrics"] == {"x": 1.0}


@pytest.mark.parametrize("new_finished", [True, False])
def test_publish_killed_between_renames_is_recovered(out, monkeypatch, new_finished):
    """SIGKILL between the renames leaves the old run in .old-* and the new one in .partial-*: the next plain run
    puts the finished new one in place (or, when the staging never finished, restores the old one)."""
    stand_in(monkeypatch, lambda ctx: ctx.metric("x", 1.0))
    first = featlab.run("fa-synthetic", out=out, **KW)
    rid, parent = first.dir.name, first.dir.parent
    new = parent / f".{rid}.partial-bbbbbb"
    shutil.copytree(first.dir, new)
    summary = json.loads((new / "summary.json").read_text())
    (new / "summary.json").write_text(json.dumps({**summary, "metrics": {"x": 2.0}}))
    if not new_finished:
        (new / "summary.json").unlink()
    os.replace(first.dir, parent / f".{rid}.old-aaaaaa")
    rec = featlab.run("fa-synthetic", out=out, **KW)
    assert rec.skipped and rec.summary["metrics"] == {"x": 2.0 if new_finished else 1.0}
    assert leftovers(out) == []


# ------------------------------------------------------------------------------------------ image checkpoints
def user_folder(tmp_path):
    ck = tmp_path / "my-folder"
    (ck / "sub").mkdir(parents=True)
    (ck / "notes.txt").write_text("mine")
    (ck / "model.pt").write_bytes(b"my own weights")
    (ck / "sub" / "data.csv").write_text("1,2")
    return ck, {p: p.read_bytes() for p in ck.rglob("*") if p.is_file()}


def test_checkpoint_dir_never_loses_a_users_files(out, tmp_path):
    ck, mine = user_folder(tmp_path)
    rec = featlab.run("mm-spurious-digits", out=out, quiet=True, checkpoint_dir=str(ck), **IMG)
    assert rec.ok and {p: p.read_bytes() for p in ck.rglob("*") if p.is_file()} == mine  # all kept, nothing added
    assert ck.is_dir() and (ck / "sub").is_dir() and not (ck / "featlab-mm-spurious-digits").exists()
    kept = featlab.run("mm-spurious-digits", out=out, quiet=True, force=True, checkpoint_dir=str(ck),
                       keep_checkpoints=True, **IMG)
    assert kept.ok and (ck / "featlab-mm-spurious-digits" / "erm-seed0.pt").is_file()
    fresh = tmp_path / "new" / "deeper"  # folders featlab made go again, once empty
    assert featlab.run("mm-spurious-digits", out=out, quiet=True, force=True, checkpoint_dir=str(fresh), **IMG).ok
    assert not (tmp_path / "new").exists()
    assert not (out / "mm-spurious-digits" / ".checkpoints").exists()


def test_killed_image_run_keeps_its_checkpoint_and_resumes_identically(out, tmp_path, monkeypatch):
    ck, mine = user_folder(tmp_path)
    real = image_trainer.save_checkpoint

    def killed_after_first_epoch(path, state):
        real(path, state)
        raise KeyboardInterrupt

    monkeypatch.setattr(image_trainer, "save_checkpoint", killed_after_first_epoch)
    with pytest.raises(KeyboardInterrupt):
        featlab.run("mm-spurious-digits", out=out, quiet=True, checkpoint_dir=str(ck), **IMG)
    monkeypatch.setattr(image_trainer, "save_checkpoint", real)
    own = ck / "featlab-mm-spurious-digits" / "erm-seed0.pt"
    assert own.is_file() and all(p.read_bytes() == b for p, b in mine.items())
    assert not [p for p in (out / "mm-spurious-digits").iterdir() if not p.name.startswith(".")]
    resumed = featlab.run("mm-spurious-digits", out=out, quiet=True, checkpoint_dir=str(ck), **IMG)
    straight = featlab.run("mm-spurious-digits", out=tmp_path / "other", quiet=True, **IMG)
    assert resumed.ok and resumed.summary["metrics"] == straight.summary["metrics"]
    assert not own.parent.exists() and {p: p.read_bytes() for p in ck.rglob("*") if p.is_file()} == mine


def test_sweep_killed_half_way_resumes_where_it_stopped(out, monkeypatch):
    from featlab.runs.sweep import sweep

    trained = []

    def fn(ctx):
        if ctx.cfg.seed == 1 and not trained.count(1):
            trained.append(1)
            raise KeyboardInterrupt  # killed on the second point
        trained.append(ctx.cfg.seed)
        ctx.metric("x", float(ctx.cfg.seed))

    stand_in(monkeypatch, fn)
    args = [f"{k}={v}" for k, v in KW.items()]
    with pytest.raises(KeyboardInterrupt):
        sweep("fa-synthetic", [*args, "seed=0,1"], out=out, progress=False, save=False)
    df = sweep("fa-synthetic", [*args, "seed=0,1"], out=out, progress=False, save=False)
    assert trained == [0, 1, 1] and list(df["x"]) == [0.0, 1.0] and list(df["status"]) == ["complete"] * 2
    assert leftovers(out) == []
