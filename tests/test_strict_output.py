"""What featlab writes and prints is readable anywhere: every JSON file and JSON printout parses with a strict parser
(no bare NaN / Infinity) and reads back the same; an ASCII-only terminal gets ASCII spellings, never a
UnicodeEncodeError; claims are listed with their settings filled; a YAML key given twice, SIGTERM and a read-only
folder each get the one-line answer featlab gives elsewhere."""

import errno
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import featlab
import featlab.runs.runner as runner
import featlab.runs.store as store
from featlab.cli import main
from featlab.config import load_yaml
from featlab.errors import ConfigError
from featlab.runs.registry import list_experiments
from featlab.text import ascii_spelling, safe_print
from featlab.utils import json_dumps, json_loads

pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(__file__).resolve().parents[1]
CHEAP = ("fa-synthetic", "rfa-fig2", "rfa-fig1", "mm-linear")  # fa-synthetic's tiny run has infinite radii
ASCII_ENV = {"PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": ""}


def strict(text: str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def tiny(experiment: str) -> dict:
    return featlab.get_experiment(experiment).tiny or {}


def words(overrides: dict) -> list[str]:
    return [f"{k}={json.dumps(v) if isinstance(v, (list, dict)) else v}" for k, v in overrides.items()]


# ------------------------------------------------------------------------------------------ strict JSON
def test_json_dumps_writes_nonfinite_by_the_rule_and_json_loads_reads_it_back():
    import numpy as np

    obj = {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": (np.float32("nan"), np.float64(2.0)), "d": "x"}
    text = json_dumps(obj, default=lambda o: o.item())
    data = strict(text)
    assert data == {"a": "NaN", "b": ["Infinity", "-Infinity", 1.5], "c": ["NaN", 2.0], "d": "x"}
    back = json_loads(text)
    assert math.isnan(back["a"]) and back["b"][:2] == [math.inf, -math.inf] and math.isnan(back["c"][0])
    assert math.isinf(json_loads('{"old": Infinity}')["old"])  # records written before the rule still read


def test_every_json_a_run_writes_or_prints_is_strict(tmp_path, capsys):
    out = tmp_path / "runs"
    for exp in CHEAP:
        assert featlab.run(exp, out=out, quiet=True, **tiny(exp)).ok
    files = sorted(out.rglob("*.json"))
    assert {f.parent.parent.name for f in files if f.name == "summary.json"} == set(CHEAP)
    for f in files:
        strict(f.read_text(encoding="utf-8"))  # raises on NaN / Infinity
    summary = next(f for f in files if f.parent.parent.name == "fa-synthetic")
    nonfinite = {k: v for k, v in json_loads(summary.read_text()).get("metrics", {}).items()
                 if isinstance(v, float) and not math.isfinite(v)}
    assert nonfinite, "fa-synthetic's tiny run no longer has an infinite radius: pick another non-finite metric"
    capsys.readouterr()
    for argv in (["show", "fa-synthetic", "--json", "--out", str(out)], ["list", "--json"],
                 ["claims", "--json"], ["config", "fa-synthetic", "--json"],
                 ["compare", "fa-synthetic", "rfa-fig2", "--json", "--out", str(out)]):
        code = main(argv)
        printed = capsys.readouterr().out
        if argv[0] == "compare" and code == 2:  # may refuse runs of two experiments: then nothing to parse
            continue
        assert code == 0, argv
        data = strict(printed)
        if argv[0] == "show":
            shown = data.get("summary", data).get("metrics", {})
            assert any(shown.get(k) == "Infinity" for k in nonfinite)


# ------------------------------------------------------------------------------------------ any terminal
def run_ascii(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, **ASCII_ENV, "FEATLAB_PROGRESS": "1", "FEATLAB_PDF": "0"}
    env.pop("PYTHONIOENCODING")
    return subprocess.run([sys.executable, "-m", "featlab.cli", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=timeout)


def test_an_ascii_only_terminal_gets_ascii_spellings(tmp_path):
    run = run_ascii(["run", "fa-synthetic", *words(tiny("fa-synthetic")), "--out", str(tmp_path / "runs")], tmp_path)
    err = run.stderr.decode("ascii", "replace")
    assert run.returncode == 0 and "Traceback" not in err and "UnicodeEncodeError" not in err, err[-2000:]
    assert run.stdout.isascii() and b"claim" in run.stdout
    claims = run_ascii(["claims"], tmp_path)
    assert claims.returncode == 0 and b"Traceback" not in claims.stderr, claims.stderr[-2000:]
    assert claims.stdout.isascii() and b"sqrt(d/2)" in claims.stdout  # √(d/2), spelled


def test_library_printing_never_raises_on_an_ascii_stream(monkeypatch, tmp_path):
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    safe_print("δ ≈ √(d/k), 10⁻⁵ µs, ✓", file=stream)
    stream.seek(0)
    assert stream.read() == "delta ~ sqrt(d/k), 10^-5 us, ok\n"
    assert ascii_spelling("η = 0.1, Σ_{J_s}μ_j") == "eta = 0.1, Sigma_{J_s}mu_j"
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    rec = featlab.run("rfa-fig1", out=tmp_path / "runs", **tiny("rfa-fig1"))  # prints its notes, not quiet
    assert rec.ok


# ------------------------------------------------------------------------------------------ item 7
def test_claims_are_listed_with_their_settings_filled(capsys):
    for exp in list_experiments():
        fields = set(exp.config.model_fields)
        for c in exp.listed().claims:
            left = {m for m in re.findall(r"\{(\w+)\}", c.statement) if m in fields}
            assert not left, f"{exp.id}/{c.id}: {c.statement}"
    assert main(["claims", "fa-synthetic"]) == 0
    printed = capsys.readouterr().out
    assert "{k}" not in printed and "10-class net" in printed.replace("\n", " ")
    docs = (ROOT / "docs" / "claims.md").read_text(encoding="utf-8")
    assert not re.search(r"\{(k|T|long_eta|long_T|long_steps|steps|dataset|seeds|n|beta_params|grad_C|grad_ks)\}",
                         docs), "docs/claims.md: run `featlab claims --markdown > docs/claims.md`"
    assert "spurious-channel cifar100" in docs  # a smoke preset (digits) does not name the paper's dataset


def test_a_yaml_key_given_twice_is_refused_by_name(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("seeds: 1\nk: 4\nseeds: 2\n")
    with pytest.raises(ConfigError, match=r"sets 'seeds' twice \(line 3\)"):
        load_yaml(cfg)
    assert main(["run", "fa-synthetic", "--config", str(cfg), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'seeds' twice" in err and not (tmp_path / "runs").exists()
    nested = tmp_path / "n.yaml"
    nested.write_text("base: &b {k: 4, seeds: 1}\nrun:\n  <<: *b\n  k: 6\n")  # a merge key then an override: fine
    assert load_yaml(nested)["run"] == {"k": 6, "seeds": 1}


def test_sigterm_says_what_sigint_says(tmp_path):
    script = textwrap.dedent(f"""
        import sys, time
        from featlab.cli import main
        from featlab.runs.registry import get_experiment
        def slow(ctx):
            print("started", flush=True)
            time.sleep(60)
        get_experiment("fa-synthetic").fn = slow
        sys.exit(main(["run", "fa-synthetic", "seeds=1", "--out", {str(tmp_path / "runs")!r}]))
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline().strip() == b"started"
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
    text = err.decode()
    assert p.returncode == 128 + signal.SIGTERM, text
    assert text.strip() == "featlab: interrupted; completed runs are kept, the unfinished one will be redone"
    assert [q.name for q in (tmp_path / "runs" / "fa-synthetic").iterdir()] == []  # staging and lock removed


def test_a_complete_run_in_a_read_only_folder_is_shown(tmp_path, monkeypatch, capsys):
    out = tmp_path / "runs"
    first = featlab.run("rfa-fig1", out=out, quiet=True, **tiny("rfa-fig1"))

    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system", str(a[0]) if a else None)

    monkeypatch.setattr(store, "_acquire", read_only)  # root ignores chmod: the lock's creation fails as on a RO mount
    again = featlab.run("rfa-fig1", out=out, quiet=True, **tiny("rfa-fig1"))
    assert again.skipped and again.dir == first.dir and again.summary == first.summary
    argv = ["run", "rfa-fig1", *words(tiny("rfa-fig1")), "--out", str(out)]
    assert main(argv) == 0 and "identical complete run exists" in capsys.readouterr().out
    assert main([*argv, "--force"]) == 2  # retraining needs to write: one line
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Read-only file system" in err
    assert main([*argv, "seeds=2"]) == 2  # no complete run of that config: refused in one line
    assert capsys.readouterr().err.count("\n") == 1

    def not_writable(folder):
        raise ConfigError(f"--out: the folder {str(folder)!r} is not writable; pass a folder you can write to")

    monkeypatch.setattr(runner, "check_out", not_writable)  # the preflight's refusal (os.access) for a non-root user
    t0 = time.perf_counter()
    assert featlab.run("rfa-fig1", out=out, quiet=True, **tiny("rfa-fig1")).skipped
    assert time.perf_counter() - t0 < 5
    with pytest.raises(ConfigError, match="not writable"):
        featlab.run("rfa-fig1", out=out, quiet=True, force=True, **tiny("rfa-fig1"))
