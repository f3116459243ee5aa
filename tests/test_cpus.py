"""The cores a process may really use: affinity and cgroup quota, not the machine's count."""

import os

import torch

from featlab import cpus


def test_cgroup_quota_v2_and_v1(tmp_path):
    assert cpus.cgroup_quota(tmp_path) is None  # nothing readable: no quota
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpus.cgroup_quota(tmp_path) is None
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cpus.cgroup_quota(tmp_path) == 1.5
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpus.cgroup_quota(v1) is None
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    assert cpus.cgroup_quota(v1) == 3.0


def test_available_cpus_is_the_affinity_capped_by_the_quota(tmp_path):
    affinity = len(os.sched_getaffinity(0))
    assert cpus.available_cpus(tmp_path) == affinity <= (os.cpu_count() or affinity)
    (tmp_path / "cpu.max").write_text("50000 100000\n")  # half a core: one thread still runs
    assert cpus.available_cpus(tmp_path) == 1
    (tmp_path / "cpu.max").write_text(f"{int(100000 * (affinity + 4))} 100000\n")  # a quota above the mask
    assert cpus.available_cpus(tmp_path) == affinity


def test_torch_threads_lowered_to_the_available_cores_never_raised(monkeypatch):
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(8)
        monkeypatch.setattr(cpus, "available_cpus", lambda root=cpus.CGROUP: 3)
        assert cpus.fit_torch_threads() == 3 == torch.get_num_threads()
        torch.set_num_threads(1)
        assert cpus.fit_torch_threads() == 1
    finally:
        torch.set_num_threads(old)
