import json

import pandas as pd
import pytest

import featlab
from featlab.cli import main
from featlab.errors import ConfigError
from featlab.plotting import parse_plot, sweep_figure
from featlab.report.sweeps import find_sweeps
from featlab.runs.sweep import grid, save_table, sweep, table_name

TINY_D = dict(seeds=1, k=4, d=32, m=2, n=60, n_test=20, T=5, radii="[0,2]", pgd_steps=2, thm46_starts=2,
              thm46_steps=2)


def tiny(*swept):
    return [f"{k}={v}" for k, v in TINY_D.items() if k not in swept]


def test_grid_is_the_cartesian_product():
    g = grid(["k=4,6", "eta=1e-3,1e-2", "radii=[0,2]"])
    assert len(g) == 4 and g[0] == {"k": 4, "eta": 1e-3, "radii": [0, 2]}
    with pytest.raises(ConfigError):
        grid(["k"])


def test_local_sweep_runs_each_point_once_and_resumes(out):
    df = sweep("fa-synthetic", ["d=32,40", *tiny("d")], out=out, progress=False)
    assert list(df.d) == [32, 40] and (df.status == "complete").all()
    assert "binary.cos_in_class_mean" in df.columns
    again = sweep("fa-synthetic", ["d=32,40", *tiny("d")], out=out, progress=False)
    pd.testing.assert_frame_equal(df, again)  # complete points are read back, not retrained
    fixed = {k: v for k, v in TINY_D.items() if k != "d"}
    kw = featlab.sweep("fa-synthetic", d=[32, 40], **fixed, out=out, progress=False)  # the Python form
    pd.testing.assert_frame_equal(df[["d", "status", "binary.cos_in_class_mean"]],
                                  kw[["d", "status", "binary.cos_in_class_mean"]])


def test_sweep_validates_every_point_before_training(out):
    with pytest.raises(ConfigError, match="'k'"):
        sweep("fa-synthetic", ["k=4,1", *tiny("k")], out=out, progress=False)
    assert not out.exists()


def test_cli_sweep_types_values_names_tables_and_plots(out, capsys):
    assert main(["sweep", "fa-synthetic", "eta=1e-2,5e-2", *tiny("eta"), "--out", str(out),
                 "--plot", "x=eta", "y=binary.cos_in_class_mean"]) == 0
    text = capsys.readouterr().out
    assert "claims_held" in text and "sweep table" in text and "sweep plot" in text
    (table,) = (out / "fa-synthetic" / "sweeps").glob("*.parquet")
    assert table.name.startswith("sweep-quick-eta_1e-2_5e-2-")
    df = pd.read_parquet(table)
    assert df.eta.dtype == "float64" and df.eta.tolist() == [0.01, 0.05]  # 1e-2 is a float, not a string
    assert table.with_suffix(".png").stat().st_size > 1000
    meta = json.loads(table.with_suffix(".json").read_text())
    assert meta["preset"] == "quick" and meta["axis_names"] == ["eta", *[k for k in TINY_D if k != "eta"]]
    (found,) = find_sweeps(out, "fa-synthetic")  # what the report shows
    assert found.plot == table.with_suffix(".png") and found.columns[0] == "eta"
    assert main(["sweep", "fa-synthetic", "eta=1e-2", *tiny("eta"), "--out", str(out), "--plot", "x=nope",
                 "y=m"]) == 2  # checked before any run


def test_table_names_are_unique_readable_and_safe():
    long = "radii=[" + ",".join(str(i) for i in range(40)) + "]"
    a, b = table_name("e", [long + ",1"], "quick"), table_name("e", [long + ",2"], "quick")
    assert a != b and a[:60] == b[:60]  # same readable prefix, different sweeps
    assert table_name("e", ["k=1"], "quick") != table_name("e", ["k=1"], "paper")
    assert "/" not in table_name("e", ["data_root=a/b,c/d"], "quick")


def test_save_table_with_slashes_and_atomically(out, monkeypatch):
    df = pd.DataFrame({"data_root": ["a/b", "c/d"], "status": ["complete"] * 2, "claims_held": [1, 1], "claims": [1, 1],
                       "acc": [0.5, 0.7]})
    path = save_table(df, out, "fa-synthetic", ["data_root=a/b,c/d"], "quick", ["data_root"])
    pd.testing.assert_frame_equal(pd.read_parquet(path), df)
    before = path.read_bytes()

    def dies(self, target, **kw):
        open(target, "wb").write(b"half a table")
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_parquet", dies)
    with pytest.raises(KeyboardInterrupt):
        save_table(df.assign(acc=[0.0, 0.0]), out, "fa-synthetic", ["data_root=a/b,c/d"], "quick", ["data_root"])
    assert path.read_bytes() == before  # the old table is intact and no temporary file is left
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, path.with_suffix(".json").name])


def test_sweep_plot_curves_and_heat_maps():
    df = pd.DataFrame({"k": [4, 4, 8, 8], "d": [32, 64, 32, 64], "acc": [0.5, 0.6, 0.7, 0.8]})
    fig = sweep_figure(df, parse_plot(["x=d", "y=acc", "hue=k"], ["k", "d"]), ["k", "d"])
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and ax.get_xlabel() == "d" and ax.get_ylabel() == "acc"
    assert ax.get_legend().get_title().get_text() == "k"
    heat = sweep_figure(df, parse_plot("x=d y=acc hue=k kind=heatmap", ["k", "d"]), ["k", "d"])
    assert heat.axes[1].get_ylabel() == "acc"  # the colour bar says what the colour is
    assert [t.get_text() for t in heat.axes[0].get_yticklabels()] == ["4", "8"]
    with pytest.raises(ConfigError, match="also varies k"):
        sweep_figure(df, parse_plot(["x=d", "y=acc"], ["k", "d"]), ["k", "d"])
    with pytest.raises(ConfigError, match="not a metric"):
        sweep_figure(df, parse_plot(["x=d", "y=nope", "hue=k"], ["k", "d"]), ["k", "d"])
    for bad in (["x=d"], ["x=q", "y=acc"], ["x=d", "y=acc", "kind=pie"], ["x=d", "y=acc", "kind=heatmap"], ["z=1"]):
        with pytest.raises(ConfigError):
            parse_plot(bad, ["k", "d"])


# the Ray executor is tested on a two-node cluster in test_distributed.py
