"""Sweeps beyond one machine: a real two-node Ray cluster and submitit's local executor (SLURM's stand-in).

Each point's record is shipped back and published into the driver's relative --out, although the workers run
elsewhere (another cwd); a point that fails is a failed row with its error while the others complete; complete
points are read back without sending any work.
"""

import os

import pytest

from featlab.runs import executors
from featlab.runs.sweep import sweep

TINY = ["seeds=1", "k=4", "m=2", "n=60", "n_test=20", "T=5", "radii=[0,2]", "pgd_steps=2", "thm46_starts=2",
        "thm46_steps=2"]
HUGE_D = 2_000_000_000  # valid config, refused on the worker (memory estimate): the deliberately failing point


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    workers_cwd = tmp_path_factory.mktemp("workers-cwd")
    old = os.getcwd()
    os.chdir(workers_cwd)  # the nodes (and so their workers) start here, not in the driver's folder
    try:
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False)
    finally:
        os.chdir(old)
    yield workers_cwd
    ray.shutdown()
    cluster.shutdown()


def test_ray_two_nodes_relative_out_failed_point_and_resume(ray_cluster, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = sweep("fa-synthetic", [f"d=32,40,{HUGE_D}", *TINY], out="rel-out", executor="ray", progress=False,
               cpus_per_point=1)
    ok = df[df.d != HUGE_D]
    assert (ok.status == "complete").all() and ok.error.eq("").all()
    bad = df[df.d == HUGE_D].iloc[0]
    assert bad.status == "failed" and "memory" in bad.error
    for d in ok.run_dir:  # published into the driver's relative --out, not the workers' cwd
        assert (tmp_path / d / "summary.json").is_file() and not os.path.isabs(d)
    assert not (ray_cluster / "rel-out").exists()
    local = sweep("fa-synthetic", ["d=32", *TINY], out=tmp_path / "local", progress=False)
    assert ok["binary.cos_in_class_mean"].iloc[0] == local["binary.cos_in_class_mean"].iloc[0]  # same numbers

    def no_work(*a, **k):
        raise AssertionError("a complete point was sent to the cluster")

    monkeypatch.setattr(executors, "_ray", no_work)
    again = sweep("fa-synthetic", ["d=32,40", *TINY], out="rel-out", executor="ray", progress=False)
    assert again.run_dir.tolist() == ok.run_dir.tolist()


def test_slurm_executor_on_submitit_local(tmp_path, monkeypatch):
    pytest.importorskip("submitit")
    monkeypatch.chdir(tmp_path)
    df = sweep("fa-synthetic", [f"d=32,{HUGE_D}", *TINY], out="out", executor="slurm", progress=False,
               slurm={"cluster": "local", "timeout_min": 5})
    assert df.status.tolist() == ["complete", "failed"] and "memory" in df.error.iloc[1]
    assert (tmp_path / df.run_dir.iloc[0] / "summary.json").is_file()


def test_resources_default_from_the_device():
    assert executors.default_gpus("cuda", 0) == 1 and executors.default_gpus("cpu", 8) == 0
    assert executors.default_gpus("auto", 2) == 1 and executors.default_gpus("auto", 0) == 0
