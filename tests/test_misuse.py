"""Bad input never produces a traceback: each case is one line on stderr, exit code 2, and leaves the output folder
exactly as it was (refused before any work). Cases by category: files, values, sizes, devices, run records,
checkpoints; plus a closed pipe and a missing data root."""

import json
import subprocess
import sys

import pytest
import torch

import featlab
from featlab.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = ["seeds=1", "k=4", "d=32", "m=2", "n=80", "n_test=40", "T=10", "eta=0.05", "radii=[0,2]", "pgd_steps=3",
        "thm46_starts=2", "thm46_steps=2"]
HUGE = "9" * 5000


def snapshot(folder):
    """Every path under ``folder`` with its bytes (None for folders); None when it does not exist."""
    if not folder.exists():
        return None
    if not folder.is_dir():
        return folder.read_bytes()
    return {str(p.relative_to(folder)): (None if p.is_dir() else p.read_bytes()) for p in sorted(folder.rglob("*"))}


def files(folder):
    return {k: v for k, v in (snapshot(folder) or {}).items() if v is not None}


def _files(ws):
    (ws / "binary.yaml").write_bytes(b"\x80\xff\xfe\x00seeds: 2")
    (ws / "nul.yaml").write_bytes(b"seeds: 2\x00\n")
    (ws / "list.yaml").write_text("- seeds\n- 2\n")
    (ws / "huge.yaml").write_text(f"k: {HUGE}\n")
    (ws / "afile").write_text("a user's file\n")
    (ws / "folder.yaml").mkdir()


# (case id, arguments after `featlab`; WS = the work folder, OUT = the output folder; words the message must hold)
RUN = ["run", "fa-synthetic", "--out", "OUT", *TINY]
CASES = [
    # files
    ("config-binary", [*RUN, "--config", "WS/binary.yaml"], ["binary.yaml", "UTF-8"]),
    ("config-nul", [*RUN, "--config", "WS/nul.yaml"], ["nul.yaml", "YAML"]),
    ("config-list", [*RUN, "--config", "WS/list.yaml"], ["list.yaml", "mapping"]),
    ("config-huge-int", [*RUN, "--config", "WS/huge.yaml"], ["huge.yaml", "digits"]),
    ("config-folder", [*RUN, "--config", "WS/folder.yaml"], ["folder.yaml", "not a regular file"]),
    ("config-missing", [*RUN, "--config", "WS/nope.yaml"], ["nope.yaml", "does not exist"]),
    ("out-file", ["run", "fa-synthetic", "--out", "WS/afile", *TINY], ["afile", "not a folder"]),
    ("out-under-file", ["run", "fa-synthetic", "--out", "WS/afile/runs", *TINY], ["afile", "not a folder"]),
    ("out-devnull", ["run", "fa-synthetic", "--out", "/dev/null", *TINY], ["/dev/null", "not a folder"]),
    ("out-uncreatable", ["run", "fa-synthetic", "--out", "/proc/featlab-runs", *TINY], ["--out", "cannot create"]),
    ("checkpoint-dir-file", ["run", "mm-spurious-digits", "--out", "OUT", "checkpoint_dir=WS/afile", "epochs=1"],
     ["checkpoint_dir", "not a folder"]),
    # values: inf/nan for float fields, bounded integers, booleans are not numbers
    ("lr-inf", [*RUN, "eta=inf"], ["'eta'", "finite"]),
    ("lr-yaml-inf", [*RUN, "eta=.inf"], ["'eta'", "finite"]),
    ("init-nan", [*RUN, "sigma_w=nan"], ["'sigma_w'", "finite"]),
    ("radius-nan", [*RUN, "radii=[0,.nan]"], ["'radii'", "finite"]),
    ("scale-inf", [*RUN, "alpha=-.inf"], ["'alpha'", "finite"]),
    ("image-lr-inf", ["run", "mm-spurious-digits", "--out", "OUT", "lr=inf"], ["'lr'", "finite"]),
    ("seed-20-digits", [*RUN, "seed=12345678901234567890"], ["'seed'", "at most"]),
    ("k-5000-digits", [*RUN, f"k={HUGE}"], ["'k'", "characters"]),
    ("m-100-digits", [*RUN, "m=" + "9" * 100], ["'m'", "at most"]),
    ("seeds-true", [*RUN, "seeds=true"], ["'seeds'", "boolean"]),
    ("T-false", [*RUN, "T=false"], ["'T'", "boolean"]),
    ("radii-bool", [*RUN, "radii=[0,true]"], ["'radii'", "boolean"]),
    # size and work, refused up front with the estimate and the field to lower
    ("million-seeds", [*RUN, "seeds=1000000"], ["memory", "GiB", "'seeds' (1000000)"]),
    ("huge-d", [*RUN, "k=2", "d=100000000000"], ["memory", "'d'"]),
    ("pgd-steps-1e12", [*RUN, "pgd_steps=1000000000000"], ["days", "'pgd_steps' (1000000000000)"]),
    # device
    ("cuda-missing", [*RUN, "device=cuda"], ["cuda", "device=cpu"]),
    # run records
    ("show-binary-summary", ["show", "WS/rec-binary"], ["summary.json"]),
    ("show-list-summary", ["show", "WS/rec-list"], ["summary.json"]),
    ("show-summary-missing-keys", ["show", "WS/rec-keys"], ["summary.json"]),
    # data
    ("data-root-missing", ["data", "check", "--root", "WS/no-such-root"], ["no-such-root", "does not exist"]),
]
if torch.cuda.is_available():  # pragma: no cover - the device case needs a machine without CUDA
    CASES = [c for c in CASES if c[0] != "cuda-missing"]


@pytest.mark.parametrize("case,argv,words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(case, argv, words, tmp_path, capsys):
    ws, out = tmp_path / "ws", tmp_path / "ws" / "runs"
    ws.mkdir()
    _files(ws)
    for name, body in [("rec-binary", b"\x00\x01\xff"), ("rec-list", b"[1, 2]"), ("rec-keys", b'{"status": "x"}')]:
        (ws / name).mkdir()
        (ws / name / "summary.json").write_bytes(body)
    argv = [a.replace("WS", str(ws)).replace("OUT", str(out)) for a in argv]
    before = snapshot(ws)
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, (case, err)
    assert err.count("\n") == 1 and err.startswith("featlab: error:"), err
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)
    assert snapshot(ws) == before  # nothing written, nothing removed


def test_malformed_checkpoints_are_one_line(tmp_path, capsys):
    ck, out = tmp_path / "ck", tmp_path / "runs"
    args = ["run", "mm-spurious-digits", "--out", str(out), f"checkpoint_dir={ck}", "keep_checkpoints=true",
            "seeds=1", "methods=[erm]", "epochs=1", "width=4", "batch_size=300"]
    own = ck / "featlab-mm-spurious-digits" / "erm-seed0.pt"
    own.parent.mkdir(parents=True)
    for bad in [b"not a checkpoint", b"PK\x03\x04truncated zip"]:
        own.write_bytes(bad)
        before = files(tmp_path)
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "erm-seed0.pt" in err and "delete it" in err and "Traceback" not in err
        assert files(tmp_path) == before  # the checkpoint is kept, no run is published
    for state in ([1, 2, 3], {"fingerprint": "[]", "epoch": 1, "history": [], "model": {}, "optimizer": {}},
                  {"fingerprint": "{not json", "epoch": 1}):
        torch.save(state, own)
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a featlab checkpoint" in err


def test_unreadable_summary_is_redone_by_run(out, monkeypatch):
    from featlab.runs.registry import get_experiment

    kw = dict(seeds=1, k=4, d=32, m=2, n=80, n_test=40, T=10)
    monkeypatch.setattr(get_experiment("fa-synthetic"), "fn", lambda ctx: ctx.metric("x", 1.0))
    first = featlab.run("fa-synthetic", out=out, **kw)
    for bad in [b"\x80\x81 binary", b"[1, 2]", b'{"status": "complete"}', b'{"status": "complete", "claims": 3}']:
        (first.dir / "summary.json").write_bytes(bad)
        with pytest.raises(featlab.FeatlabError, match="summary.json"):
            featlab.load_run(first.dir)
        again = featlab.run("fa-synthetic", out=out, **kw)
        assert not again.skipped and again.ok and again.dir == first.dir
        assert json.loads((first.dir / "summary.json").read_text())["metrics"] == {"x": 1.0}


def test_closed_pipe_exits_quietly(tmp_path):
    """`featlab list | head -1`: the reader leaves at once; no BrokenPipeError, nothing on stderr."""
    p = subprocess.Popen([sys.executable, "-m", "featlab.cli", "list"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=tmp_path)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait() in (0, 141) and err == ""


def test_notes_survive_a_closed_stdout(out, monkeypatch):
    """A run whose stdout pipe closes keeps going and is published (its notes are in summary.json)."""
    from featlab.runs.registry import get_experiment

    calls = []

    def broken(*a, **k):
        calls.append(a)
        raise BrokenPipeError

    monkeypatch.setattr(get_experiment("fa-synthetic"), "fn", lambda ctx: (ctx.note("one"), ctx.note("two")))
    monkeypatch.setattr("featlab.runs.context.silence_stdout", lambda: None)
    monkeypatch.setattr("builtins.print", broken)
    rec = featlab.run("fa-synthetic", out=out, seeds=1, k=4, d=32, m=2, n=80, n_test=40, T=10)
    monkeypatch.undo()
    assert rec.ok and rec.summary["notes"] == ["one", "two"] and len(calls) == 2


def test_work_of_a_day_is_warned_not_refused(capsys):
    from featlab.runs.runner import check_resources, resolve_config

    _, cfg = resolve_config("fa-synthetic", "quick", overrides={"seeds": 1, "pgd_steps": 10_000_000_000})
    check_resources("fa-synthetic", cfg)
    err = capsys.readouterr().err
    assert err.startswith("featlab: warning:") and "days" in err and "'pgd_steps'" in err
    for exp, presets in (("fa-synthetic", ("quick", "paper")), ("rfa-theorem1", ("quick", "app-e")),
                         ("fa-ablation-n", ("quick", "paper")), ("mm-multiview", ("quick", "cpu-long"))):
        for preset in presets:  # presets pass silently
            check_resources(exp, resolve_config(exp, preset)[1])
    assert capsys.readouterr().err == ""
