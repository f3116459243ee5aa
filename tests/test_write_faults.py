"""Every command that writes besides `run` (report, report --publish, sweep, stability, embed) checks its destination
before the work, writes each file whole or not at all, and says an OS error in one line (exit 2, no traceback):
a folder where a file goes, a file where a folder goes, a read-only folder, a disk that fills mid-write. Also:
report.md escapes the raw HTML a record may hold, as the HTML page does.

Faults are real where this machine allows (a full or read-only tmpfs when running as root with mount rights, chmod
otherwise) and simulated where it does not (an OSError raised by the writing function)."""

import errno
import io
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from pydantic import Field

import featlab
from featlab.cli import main
from featlab.config import ExperimentConfig
from featlab.plotting import subplots
from featlab.runs import registry
from featlab.runs.claims import AtLeast, Claim
from featlab.utils import atomic_write

XSS = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
CALLS = {"n": 0}  # runs of the toy: a refused command must not have run one


class WriteConfig(ExperimentConfig):
    score: float = Field(0.95, description="the toy's measured score")
    label: str = Field("plain", description="a free-text config value")
    shift: float = Field(0.0, description="subtracted from the score [paper silent]",
                         json_schema_extra={"range": [0.0, 0.01]})


@pytest.fixture(scope="module")
def toy():
    registry.list_experiments()  # featlab's own papers first, into the real registry (they register once)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
        mp.setattr(registry, "_PAPERS", dict(registry._PAPERS))
        registry.register_paper("toy-write", "Toy paper (write faults)", "toyw")

        @registry.experiment("toyw-ok", paper="toy-write", reference="Thm 1", summary="a score", config=WriteConfig,
                             presets={"quick": {"seeds": 1}, "paper": {"seeds": 1}},
                             claims=[Claim("toyw.high", f"the score {XSS} is high & fine", "Thm 1", AtLeast(lo=0.5),
                                           exact="a toy")])
        def toy_exp(ctx):
            CALLS["n"] += 1
            fig, ax = subplots(figsize=(3, 2))
            ax.plot([0, 1], [0, ctx.cfg.score])
            ctx.figure(fig, "scores")
            ctx.claim("toyw.high", ctx.cfg.score - ctx.cfg.shift)
            ctx.notes.append(f"a note with {IMG}")

        yield registry


@pytest.fixture(scope="module")
def runs(toy, tmp_path_factory):
    """One run at the paper preset (what report and --publish read), with raw HTML in a config value."""
    out = tmp_path_factory.mktemp("runs")
    featlab.run("toyw-ok", "paper", out=out, label=XSS, quiet=True)
    return out


def one_line_error(capsys, *words: str) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("featlab: error: "), err
    assert "Traceback" not in err and ".tmp" not in err, err  # the user's file is named, not a temporary one
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


# ------------------------------------------------------------------------------------------ faults, real or not
def _mount(where: Path, opts: str) -> bool:
    """A tmpfs at ``where`` (root with mount rights only); False where this machine does not allow it."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)],
                          capture_output=True).returncode == 0


def _umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A folder nothing can be written in: a read-only tmpfs, else chmod (not root), else a simulated refusal."""
    d = tmp_path / "ro"
    if _mount(d, "ro,size=64k"):
        yield d
        _umount(d)
        return
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
        yield d
        d.chmod(0o755)
        return
    access = os.access  # root ignores chmod: the check sees the folder as a read-only one would be seen

    def no_write(p, mode, *a, **k):
        return False if Path(p) == d and mode & os.W_OK else access(p, mode, *a, **k)

    monkeypatch.setattr(os, "access", no_write)
    yield d


@contextmanager
def failing_writes(monkeypatch, root: Path, code: int):
    """Writes under ``root`` fail with ``code``; ENOSPC after half the bytes reached the file (a disk that fills
    mid-write, as the kernel says it: no file name), any other before the first byte (naming the file)."""
    def fail(target, data: bytes) -> None:
        target = Path(target)
        if root not in target.parents:
            return
        if code == errno.ENOSPC:
            with open(target, "wb") as f:
                f.write(data[: len(data) // 2])
            raise OSError(code, os.strerror(code))
        raise OSError(code, os.strerror(code), str(target))

    wt, wb, copy, pq = Path.write_text, Path.write_bytes, shutil.copyfile, pd.DataFrame.to_parquet

    def to_parquet(df, path, *a, **k):
        buf = io.BytesIO()
        pq(df, buf, *a, **k)
        fail(path, buf.getvalue())
        return pq(df, path, *a, **k)

    with monkeypatch.context() as mp:
        mp.setattr(Path, "write_text", lambda p, s, *a, **k: (fail(p, s.encode()), wt(p, s, *a, **k))[1])
        mp.setattr(Path, "write_bytes", lambda p, b: (fail(p, b), wb(p, b))[1])
        mp.setattr(shutil, "copyfile", lambda s, d, **k: (fail(d, Path(s).read_bytes()), copy(s, d, **k))[1])
        mp.setattr(pd.DataFrame, "to_parquet", to_parquet)
        yield


@pytest.fixture
def full_disk(tmp_path):
    """A tmpfs with a few KB left, or skip where this machine cannot mount one (the simulated tests still run)."""
    d = tmp_path / "full"
    if not _mount(d, "size=256k"):
        pytest.skip("no tmpfs here (needs root with mount rights); the simulated ENOSPC tests cover this")
    filler = d / "filler"
    try:
        with open(filler, "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError as e:
        assert e.errno == errno.ENOSPC
    os.truncate(filler, filler.stat().st_size - 6000)  # room for a file's start, not for a figure
    yield d
    _umount(d)


# ------------------------------------------------------------------------------------------ report
def test_report_refuses_a_folder_or_a_file_in_the_wrong_place_before_writing(runs, tmp_path, capsys):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert main(["report", str(runs), "--paper", "toy-write", "--out", str(folder)]) == 2
    one_line_error(capsys, "--out", "is a folder", "report.html")
    assert files(folder) == set()
    blocker = tmp_path / "a-file"
    blocker.write_text("mine")
    assert main(["report", str(runs), "--paper", "toy-write", "--out", str(blocker / "report.html")]) == 2
    one_line_error(capsys, "--out", "is a file, not a folder")
    (tmp_path / "page_files").write_text("mine")  # where the Markdown twin's figures would go
    assert main(["report", str(runs), "--paper", "toy-write", "--out", str(tmp_path / "page.html")]) == 2
    one_line_error(capsys, "page_files", "is a file, not a folder")
    assert not (tmp_path / "page.html").exists() and blocker.read_text() == "mine"


def test_report_and_publish_into_a_read_only_folder_are_refused_before_the_work(runs, read_only, tmp_path, capsys):
    assert main(["report", str(runs), "--paper", "toy-write", "--out", str(read_only / "report.html")]) == 2
    one_line_error(capsys, "--out", str(read_only), "pass a file in a folder you can write to")
    page = tmp_path / "page.html"
    assert main(["report", str(runs), "--paper", "toy-write", "--out", str(page), "--publish",
                 str(read_only / "results")]) == 2
    one_line_error(capsys, "--publish", str(read_only))
    assert not page.exists()  # refused before the report was written, not after
    assert files(read_only) == set()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_report_write_failing_mid_way_is_one_line_and_leaves_no_partial_file(runs, tmp_path, monkeypatch, capsys,
                                                                             code):
    dest = tmp_path / "site"
    dest.mkdir()
    (dest / "report.md").write_text("the previous report\n")
    with failing_writes(monkeypatch, dest, code):
        assert main(["report", str(runs), "--paper", "toy-write", "--out", str(dest / "report.html")]) == 2
    one_line_error(capsys, "cannot write", str(dest), os.strerror(code), "--out")
    assert files(dest) == {"report.md"} and (dest / "report.md").read_text() == "the previous report\n"


def test_report_on_a_really_full_disk_is_one_line_and_leaves_no_truncated_figure(runs, full_disk, capsys):
    assert main(["report", str(runs), "--paper", "toy-write", "--out", str(full_disk / "report.html")]) == 2
    one_line_error(capsys, f"cannot write '{full_disk}/report_files/", "No space left on device", "free some space")
    sources = {p.read_bytes() for p in runs.rglob("*.png")}
    for f in files(full_disk) - {"filler"}:  # whatever was written before the disk filled is whole
        assert not Path(f).name.startswith("."), f
        assert f.endswith(".png") and (full_disk / f).read_bytes() in sources, f


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_publish_failing_mid_way_is_one_line_and_leaves_no_partial_file(runs, tmp_path, monkeypatch, capsys, code):
    dest = tmp_path / "results"
    with failing_writes(monkeypatch, dest, code):
        assert main(["report", str(runs), "--paper", "toy-write", "--out", str(tmp_path / "r.html"),
                     "--publish", str(dest)]) == 2
    one_line_error(capsys, "cannot write", str(dest), "--publish")
    assert files(dest) == set()  # no half config.yaml, no temporary file
    assert main(["report", str(runs), "--paper", "toy-write", "--out", str(tmp_path / "r.html"),
                 "--publish", str(tmp_path / "r.html")]) == 2  # a file where the folder goes
    one_line_error(capsys, "--publish", "is a file, not a folder")


# ------------------------------------------------------------------------------------------ sweep, stability
def test_sweep_checks_its_table_folder_before_running_a_point(toy, read_only, tmp_path, capsys):
    before = CALLS["n"]
    assert main(["sweep", "toyw-ok", "score=0.6,0.7", "--out", str(read_only)]) == 2
    one_line_error(capsys, "--out", str(read_only))
    blocker = tmp_path / "a-file"
    blocker.write_text("mine")
    assert main(["sweep", "toyw-ok", "score=0.6,0.7", "--out", str(blocker)]) == 2
    one_line_error(capsys, "--out", "is a file, not a folder")
    assert CALLS["n"] == before  # no point ran


def test_sweep_table_write_failing_keeps_the_runs_and_leaves_no_partial_table(toy, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    with failing_writes(monkeypatch, out / "toyw-ok" / "sweeps", errno.ENOSPC):
        assert main(["sweep", "toyw-ok", "score=0.6,0.7", "--out", str(out)]) == 2
    one_line_error(capsys, "No space left on device", "sweep-quick-score", "runs are kept")
    assert files(out / "toyw-ok" / "sweeps") == set()
    assert len(list((out / "toyw-ok").glob("*/summary.json"))) == 2  # the points' runs are kept
    assert main(["sweep", "toyw-ok", "score=0.6,0.7", "--out", str(out)]) == 0  # and read back by a rerun
    assert len(list((out / "toyw-ok" / "sweeps").glob("*.parquet"))) == 1


def test_stability_checks_its_folder_first_and_says_a_failed_save_in_one_line(toy, read_only, tmp_path,
                                                                              monkeypatch, capsys):
    before = CALLS["n"]
    assert main(["stability", "toyw-ok", "--fields", "shift", "--out", str(read_only)]) == 2
    one_line_error(capsys, "--out", str(read_only))
    assert CALLS["n"] == before
    out = tmp_path / "out"
    with failing_writes(monkeypatch, out / "toyw-ok" / "stability", errno.ENOSPC):
        assert main(["stability", "toyw-ok", "--fields", "shift", "--out", str(out)]) == 2
    one_line_error(capsys, "No space left on device", "runs are kept")
    assert not list((out / "toyw-ok" / "stability").glob("stability-*"))


def test_embed_checks_its_output_before_encoding(tmp_path, capsys):
    assert main(["embed", "--out", str(tmp_path)]) == 2  # before open_clip or the images are needed
    one_line_error(capsys, "--out", "is a folder", "cifar10_clip_vitb32.npz")
    (tmp_path / "f").write_text("")
    assert main(["embed", "--out", str(tmp_path / "f" / "z.npz")]) == 2
    one_line_error(capsys, "--out", "is a file, not a folder")


def test_atomic_write_names_the_destination_and_leaves_no_temporary_file(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(IsADirectoryError) as e:
        atomic_write(tmp_path / "taken", "text")
    assert e.value.filename == str(tmp_path / "taken")

    def half_then_full(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    (tmp_path / "kept").write_text("old")
    with pytest.raises(OSError) as e:
        atomic_write(tmp_path / "kept", half_then_full)
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(tmp_path / "kept")
    assert (tmp_path / "kept").read_text() == "old" and files(tmp_path) == {"kept"}


# ------------------------------------------------------------------------------------------ report.md escaping
def test_report_md_escapes_raw_html_from_claims_notes_and_config_as_the_html_page_does(runs, tmp_path):
    assert main(["report", str(runs), "--paper", "toy-write", "--out", str(tmp_path / "report.html")]) == 0
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    for raw in ("<script", "<img", "</script"):
        assert raw not in md
    assert f"the score {XSS} is high & fine".replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in md
    assert "a note with &lt;img src=x onerror=alert(1)&gt;" in md  # the note
    assert "| `label` | plain | &lt;script&gt;alert(1)&lt;/script&gt; |" in md  # the config value
    assert "| `toyw.high` (" in md and "#### run `" in md  # featlab's own markup is kept
    links = [ln.split("](", 1)[1][:-1] for ln in md.splitlines() if ln.startswith("![")]
    assert links and all((tmp_path / link).is_file() for link in links)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<img src=x" not in page
