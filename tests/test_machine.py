"""The CPUs this process may use (affinity, cgroup quota) are reported next to
the machine's total, and TF's thread pools are sized to them."""
import json
import os
import subprocess
import sys

import pytest

from engine.hardware import machine, verdicts

MULTI = (os.cpu_count() or 1) > 1
needs_two = pytest.mark.skipif(not MULTI or not hasattr(os, "sched_setaffinity"),
                               reason="needs a machine with 2 or more CPUs and sched_setaffinity")


def one_cpu():
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # as `taskset -c 0` does


def test_cgroup_quota_v2_and_v1(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "cpu.max").write_text("max 100000\n")
    (tmp_path / "app" / "cpu.max").write_text("150000 100000\n")
    assert machine.cpu_quota(str(tmp_path), "0::/app\n") == 1.5
    assert machine.cpu_quota(str(tmp_path), "0::/\n") is None  # "max": no limit
    v1 = tmp_path / "v1"
    (v1 / "cpu" / "docker" / "c1").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (v1 / "cpu" / "docker" / "cpu.cfs_quota_us").write_text("300000\n")  # a parent's limit counts too
    (v1 / "cpu" / "docker" / "cpu.cfs_period_us").write_text("100000\n")
    (v1 / "cpu" / "docker" / "c1" / "cpu.cfs_quota_us").write_text("50000\n")
    (v1 / "cpu" / "docker" / "c1" / "cpu.cfs_period_us").write_text("100000\n")
    assert machine.cpu_quota(str(v1), "4:cpu,cpuacct:/docker/c1\n") == 0.5
    assert machine.cpu_quota(str(v1), "4:cpu,cpuacct:/docker\n") == 3.0


def test_usable_count_in_lines_and_verdicts():
    f = {"logical_cores": 8, "affinity_cpus": 8, "cpu_quota": 1.5, "usable_cpus": 2}
    assert machine.cpu_line(f) == "2 of 8 CPU cores usable (quota 1.5)"
    assert machine.cpu_line({"logical_cores": 2, "affinity_cpus": 1, "cpu_quota": None, "usable_cpus": 1}) == \
        "1 of 2 CPU cores usable (affinity 1)"
    assert machine.cpu_line({"logical_cores": 4, "usable_cpus": 4}) == "4 CPU cores"
    (multi,) = [v for v in verdicts.verdicts({"host": {"logical_cores": 8, "usable_cpus": 2}, "gpus": []})
                if v["option"] == "multi_device"]
    assert multi["reason"] == ("one physical CPU (2 usable cores): extra replicas are simulated logical devices "
                               "sharing it, no speedup expected")


@pytest.mark.worker
@needs_two
def test_quick_facts_and_the_train_page_line_under_taskset():
    code = ("import json; from engine.hardware.machine import quick_facts, cpu_line; "
            "f = quick_facts(); print(json.dumps([f['usable_cpus'], f['logical_cores'], cpu_line(f)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         preexec_fn=one_cpu)
    usable, total, line = json.loads(out.stdout.strip().splitlines()[-1])
    assert (usable, total) == (1, os.cpu_count())
    assert line == f"1 of {os.cpu_count()} CPU cores usable (affinity 1)"


@pytest.mark.worker
@needs_two
def test_the_stored_environment_and_threads_follow_the_usable_cpus(store_home):
    out = subprocess.run([sys.executable, "-m", "engine", "run", "--model", "mlp", "--epochs", "1", "--json",
                          "--quiet"], capture_output=True, text=True, timeout=300, preexec_fn=one_cpu)
    assert out.returncode == 0, out.stderr[-2000:]
    rid = json.loads(out.stdout.strip().splitlines()[-1])["run_id"]
    from engine.store import Store

    s = Store()
    env = s.get_run(rid)["environment"]
    s.close()
    assert (env["usable_cpus"], env["logical_cores"], env["tf_threads"]) == (1, os.cpu_count(), 1)
