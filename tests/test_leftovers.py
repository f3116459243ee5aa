"""Round 4's smaller faults: a refused report leaves none of its files behind, a link in a run's note stays text in
report.md, `report --all` embeds only each experiment's latest figures, `reproduce device=cuda` without a GPU exits 2
before any work, '1 seed' and 'featlab runs' (never '1 seeds', 'featlab runs runs'). Fabricated records only."""

import errno
import json
import os

import torch

from featlab.cli import main
from featlab.report import pages
from featlab.report.tables import interval_text
from featlab.runs.index import runs_command
from test_inspect import fake_run

PNG = bytes.fromhex("89504e470d0a1a0a") + b"\0" * 64


def _with_figure_and_note(run, note):
    (run / "figures" / "fig.png").write_bytes(PNG)
    s = json.loads((run / "summary.json").read_text())
    s.update(figures=["figures/fig.png"], notes=[note])
    (run / "summary.json").write_text(json.dumps(s))
    return run


def test_a_link_in_a_note_stays_text_in_report_md(out, capsys):
    _with_figure_and_note(fake_run(out, "aaaaaaaaaaaa"), "see [link](javascript:alert(4)) and [x]: javascript:y")
    assert main(["report", str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "](javascript:" not in md and "]: javascript:" not in md and "javascript:alert(4)" in md
    assert "unverified (no hashes)" in md and "unverified (no hashes)" in (out / "report.html").read_text("utf-8")


def test_a_refused_report_leaves_none_of_its_files(out, tmp_path, monkeypatch, capsys):
    _with_figure_and_note(fake_run(out, "aaaaaaaaaaaa"), "a note")
    site = tmp_path / "site"
    site.mkdir()
    (site / "mine.txt").write_text("a user's file")

    def full_disk(report, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(pages, "write_html", full_disk)  # the page fails after the twin and its figures
    assert main(["report", str(out), "--out", str(site / "r.html")]) == 2
    assert sorted(p.name for p in site.rglob("*")) == ["mine.txt"]  # no r.md, no r_files/ of PNGs


def test_report_all_embeds_only_the_latest_figures_of_each_experiment(out, capsys):
    for i, rid in enumerate(["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"]):
        _with_figure_and_note(fake_run(out, rid, age=100 * (3 - i), k=4 + i), "a note")
    assert main(["report", str(out), "--all"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 1 and "embedded for the latest run only" in page
    assert len(list((out / "report_files").iterdir())) == 1


def test_reproduce_on_cuda_without_a_gpu_exits_2_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["reproduce", "feature-amplification", "device=cuda", "--out", str(tmp_path / "r")]) == 2
    io = capsys.readouterr()
    assert "no CUDA device" in io.err and len(io.err.strip().splitlines()) == 1 and "plan" not in io.out
    assert not (tmp_path / "r").exists()


def test_counts_and_commands_read_as_english():
    assert interval_text({"interval": [0.1, 0.2], "n": 1, "unit": "seeds"}).endswith("(1 seed)")
    assert interval_text({"interval": [0.1, 0.2], "n": 4, "unit": "seeds"}).endswith("(4 seeds)")
    assert runs_command("runs") == "featlab runs" and runs_command("out/x") == "featlab runs out/x"
