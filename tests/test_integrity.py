"""A stored result is never trusted unchecked: every file of a run record carries its hash in summary.json; a record
whose file no longer matches is "damaged" in every reader (one line, exit 2) and redone by `featlab run`, never
reused; `featlab runs --verify` checks a folder; a record made before hashes is read as "unverified (no hashes)" and
redone rather than reused. One tiny real fa-synthetic run (made once, copied per test)."""

import json
import os
import shutil

import pytest

import featlab
from featlab.cli import main
from featlab.errors import RunRecordError
from featlab.runs.store import RunWriter
from test_inspect import fake_run

TINY = featlab.get_experiment("fa-synthetic").tiny


@pytest.fixture(scope="module")
def real(shared_out):
    return featlab.run("fa-synthetic", out=shared_out, quiet=True, **TINY).dir


@pytest.fixture
def copy(real, out):
    d = out / "fa-synthetic" / real.name
    shutil.copytree(real, d)
    return d


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("featlab: error: ") and "Traceback" not in err[0], err
    return err[0]


def test_every_file_of_a_record_carries_its_hash(copy):
    files = json.loads((copy / "summary.json").read_text())["files"]
    on_disk = {p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file() and p.name != "summary.json"}
    assert set(files) == on_disk and {"config.yaml", "metrics.parquet"} <= on_disk
    assert all(v.startswith("sha256:") and len(v) == 71 for v in files.values())
    assert featlab.load_run(copy).verified


def _damage(copy, damage):
    if damage == "truncate metrics":
        with open(copy / "metrics.parquet", "r+b") as f:
            f.truncate(500)
    elif damage == "edit config":
        (copy / "config.yaml").write_text((copy / "config.yaml").read_text() + "# edited\n")
    elif damage == "endless device":  # a link to a device that never ends: refused, never read
        (copy / "metrics.parquet").unlink()
        os.symlink("/dev/zero", copy / "metrics.parquet")
    elif damage == "hash entry removed":  # the table truncated and its entry dropped: still damage
        s = json.loads((copy / "summary.json").read_text())
        del s["files"]["metrics.parquet"]
        (copy / "summary.json").write_text(json.dumps(s))
        with open(copy / "metrics.parquet", "r+b") as f:
            f.truncate(500)
    elif damage == "outside the folder":
        s = json.loads((copy / "summary.json").read_text())
        s["files"]["../../../etc/hostname"] = "sha256:" + "0" * 64
        (copy / "summary.json").write_text(json.dumps(s))
    else:
        fig = next((copy / "figures").glob("*.png"))
        fig.unlink() if damage == "remove figure" else fig.write_bytes(b"\x89PNG not the figure")


@pytest.mark.parametrize("damage", ["truncate metrics", "edit config", "replace figure", "remove figure",
                                    "endless device", "outside the folder", "hash entry removed"])
def test_a_damaged_record_is_refused_by_every_reader(copy, out, capsys, damage):
    _damage(copy, damage)
    with pytest.raises(RunRecordError, match="is damaged: .* redone on the next"):
        featlab.load_run(copy)
    for argv in (["show", str(copy)], ["show", "fa-synthetic", "--out", str(out)], ["compare", str(copy), str(copy)],
                 ["report", str(out)]):
        assert main(argv) == 2, argv
        assert "damaged" in _one_error(capsys) or argv[0] == "show"
    assert main(["runs", "--verify", str(out)]) == 2
    assert "damaged" in capsys.readouterr().out


def test_a_damaged_record_is_redone_not_reused(copy, out, capsys):
    _damage(copy, "truncate metrics")
    again = featlab.run("fa-synthetic", out=out, quiet=True, **TINY)
    assert not again.skipped and again.dir == copy and again.verified  # retrained, never a cache hit
    assert "is damaged" in capsys.readouterr().err
    assert main(["runs", "--verify", str(out)]) == 0
    assert "1 verified, 0 unverified (no hashes), 0 damaged" in capsys.readouterr().out


def test_a_record_without_hashes_is_read_as_unverified_and_redone(copy, out, capsys):
    s = json.loads((copy / "summary.json").read_text())
    del s["files"]
    (copy / "summary.json").write_text(json.dumps(s))
    rec = featlab.load_run(copy)
    assert not rec.verified and rec.integrity == "unverified (no hashes)"
    assert main(["show", str(copy)]) == 0
    assert "unverified (no hashes)" in capsys.readouterr().err
    other = fake_run(out, "bbbbbbbbbbbb", age=60)
    assert main(["compare", str(other), str(copy)]) == 0
    assert capsys.readouterr().err.count("unverified (no hashes)") == 2
    assert main(["runs", "--verify", str(out)]) == 0
    assert "unverified (no hashes)" in capsys.readouterr().out
    assert RunWriter(out, "fa-synthetic", copy.name).existing() is None  # what `featlab run` would reuse: nothing
    assert "redone, not reused" in capsys.readouterr().err


def test_an_intact_record_is_reused(copy, out, capsys):
    again = featlab.run("fa-synthetic", out=out, quiet=True, **TINY)
    assert again.skipped and again.dir == copy


def test_a_missing_runs_folder_and_a_folder_without_runs_exit_2(out, tmp_path, capsys):
    assert main(["runs", str(tmp_path / "missing")]) == 2
    assert "no runs folder" in _one_error(capsys)
    assert main(["runs", "--verify", str(tmp_path / "missing")]) == 2
    _one_error(capsys)
    out.mkdir()
    assert main(["report", str(out)]) == 2
    assert "no readable run" in _one_error(capsys) and not (out / "report.html").exists()
    fake_run(out, "aaaaaaaaaaaa")
    assert main(["report", str(out), "--paper", "midpoint-mixup"]) == 2  # runs, but none of this paper
    _one_error(capsys)
