import pandas as pd
import pytest

from featlab.cli import main
from featlab.errors import ConfigError
from featlab.runs.sweep import grid, sweep

TINY_D = dict(seeds=1, k=4, d=32, m=2, n=60, n_test=20, T=5, radii="[0,2]", pgd_steps=2, thm46_starts=2,
              thm46_steps=2)


def tiny(*swept):
    return [f"{k}={v}" for k, v in TINY_D.items() if k not in swept]


def test_grid_is_the_cartesian_product():
    g = grid(["k=4,6", "eta=1e-3,1e-2", "radii=[0,2]"])
    assert len(g) == 4 and g[0] == {"k": 4, "eta": "1e-3", "radii": [0, 2]}
    with pytest.raises(ConfigError):
        grid(["k"])


def test_local_sweep_runs_each_point_once_and_resumes(out):
    df = sweep("fa-synthetic", ["d=32,40", *tiny("d")], out=out, progress=False)
    assert list(df.d) == [32, 40] and (df.status == "complete").all()
    assert "binary.cos_in_class_mean" in df.columns
    again = sweep("fa-synthetic", ["d=32,40", *tiny("d")], out=out, progress=False)
    pd.testing.assert_frame_equal(df, again)  # complete points are read back, not retrained


def test_sweep_validates_every_point_before_training(out):
    with pytest.raises(ConfigError, match="'k'"):
        sweep("fa-synthetic", ["k=4,1", *tiny("k")], out=out, progress=False)
    assert not out.exists()


def test_cli_sweep(out, capsys):
    assert main(["sweep", "fa-synthetic", "eta=0.01,0.05", *tiny("eta"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "claims_held" in text and "sweep table" in text
    assert list((out / "fa-synthetic" / "sweeps").glob("*.parquet"))


def test_ray_executor(out):
    pytest.importorskip("ray")
    df = sweep("fa-synthetic", ["d=32,40", *tiny("d")], out=out, executor="ray", progress=False)
    local = sweep("fa-synthetic", ["d=32,40", *tiny("d")], out=out / "local", progress=False)
    assert (df.status == "complete").all()
    assert df["binary.cos_in_class_mean"].tolist() == local["binary.cos_in_class_mean"].tolist()
