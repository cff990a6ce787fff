"""engine.hardware.fingerprint: the three CPUs this project's machines change between, from
faked /proc/cpuinfo text (never this machine's own CPU)."""
import hashlib
import json

from engine.hardware import fingerprint as fpm

ZEN4 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9B14
stepping\t: 1
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw avx512_bf16 avx512_vnni

processor\t: 1
vendor_id\t: AuthenticAMD
"""
ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC 7B13
stepping\t: 0
flags\t\t: fpu sse2 avx avx2 fma
"""
XEON = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 2
flags\t\t: fpu avx avx2 fma avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8
"""
TF = {"tensorflow": "2.21.0", "jax": None, "jaxlib": None, "keras": "3.12.1"}


def fp(text, **kw):
    return fpm.compute(text, kw.pop("cores", 2), backends=kw.pop("backends", TF), **kw)


def test_names_read_right_for_the_three_cpus():
    assert fp(ZEN3)["name"] == "AMD EPYC 7B13 Zen 3 (family 25 model 1), AVX2+FMA, no bf16, 2 cores"
    assert fp(ZEN4)["name"] == "AMD EPYC 9B14 Zen 4 (family 25 model 17), AVX-512, bf16, 2 cores"
    assert fp(XEON)["name"] == ("Intel Xeon Emerald Rapids (family 6 model 207), AVX-512+AMX, bf16, "
                                "2 cores")


def test_same_model_name_different_microarchitecture_different_ids():
    zen3 = fp(ZEN3.replace("AMD EPYC 7B13", "AMD EPYC"))
    zen4 = fp(ZEN4.replace("AMD EPYC 9B14", "AMD EPYC"))
    ids = {zen3["id"], zen4["id"], fp(XEON)["id"]}
    assert len(ids) == 3 and all(len(i) == 12 for i in ids)
    assert zen3["name"].startswith("AMD EPYC Zen 3 ") and zen4["name"].startswith("AMD EPYC Zen 4 ")


def test_id_is_sha256_of_the_documented_parts():
    hashed = {"vendor": "AuthenticAMD", "family": 25, "model": 1, "stepping": 0, "flags": ["avx2", "fma"],
              "usable_cpus": 2, "accelerators": [], "tpu": False,
              "backends": {"tensorflow": "2.21", "jax": None, "jaxlib": None, "keras": "3.12"}}
    want = hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:12]
    assert fp(ZEN3)["id"] == want
    assert fp(ZEN3)["cpu"] == {"vendor": "AuthenticAMD", "family": 25, "model": 1, "stepping": 0,
                               "model_name": "AMD EPYC 7B13", "arch": "Zen 3", "flags": ["avx2", "fma"]}


def test_id_ignores_memory_and_patch_versions_but_not_cores_gpus_or_minor_versions():
    base = fp(ZEN3)["id"]
    assert fp(ZEN3, memory_gib=7.8)["id"] == base
    assert fp(ZEN3, backends={**TF, "tensorflow": "2.21.3"})["id"] == base
    assert fp(ZEN3, backends={**TF, "tensorflow": "2.22.0"})["id"] != base
    assert fp(ZEN3, cores=1)["id"] != base
    gpu = fp(ZEN3, gpu_names=("NVIDIA H200",))
    assert gpu["id"] != base and gpu["accelerators"] == [{"name": "NVIDIA H200", "count": 1}]
    assert gpu["name"].endswith(", 2 cores, 1x NVIDIA H200")


def test_unknown_cpu_has_no_arch_word_and_arm_reads_its_features():
    other = fp(ZEN3.replace("cpu family\t: 25", "cpu family\t: 24"))
    assert other["name"] == "AMD EPYC 7B13 (family 24 model 1), AVX2+FMA, no bf16, 2 cores"
    arm = fp("processor\t: 0\nCPU implementer\t: 0x41\nFeatures\t: fp asimd sve\n", cores=4)
    assert arm["cpu"]["flags"] == ["asimd", "sve"] and arm["name"].endswith("SVE, no bf16, 4 cores")


def test_live_flags_come_from_the_faked_cpu(fake_cpu):
    fake_cpu({"avx2", "fma"})
    a = fpm.fingerprint()
    assert a["cpu"]["flags"] == ["avx2", "fma"] and ", no bf16, " in a["name"]
    fake_cpu({"avx2", "fma", "avx512f", "avx512_bf16"})
    b = fpm.fingerprint()
    assert b["id"] != a["id"] and ", AVX-512, bf16, " in b["name"]


def test_matches_on_id_and_old_rows_only_when_opted_in(monkeypatch):
    monkeypatch.delenv(fpm.UNKNOWN_SETTING, raising=False)
    assert fpm.matches({"id": "aaa"}, "vm", here="aaa")
    assert not fpm.matches({"id": "bbb"}, "vm", here="aaa")  # same hostname, other machine
    assert not fpm.matches(None, None, here="aaa")
    monkeypatch.setenv(fpm.UNKNOWN_SETTING, "1")
    assert fpm.matches(None, None, here="aaa")
    assert not fpm.matches({"id": "bbb"}, None, here="aaa")  # opting in never joins two known machines
    assert fpm.name_of({"fingerprint": {"id": "aaa", "name": "Zen 3"}}) == "Zen 3"
    assert fpm.name_of({"hostname": "vm"}) == "machine unknown"


def test_every_benchmark_record_names_its_machine_after_its_title():
    from pathlib import Path

    results = Path(__file__).parent.parent / "benchmarks" / "results"
    index = (results / "MACHINES.md").read_text()
    for f in sorted(results.iterdir()):
        if f.suffix != ".md":  # data and pictures: named in the index with their record's machine
            row = next((line for line in index.splitlines() if line.startswith(f"| {f.name} |")), None)
            assert row is not None and (" · fingerprint " in row or "machine not recorded" in row), f.name
            continue
        if f.name == "MACHINES.md":
            continue
        lines = f.read_text().splitlines()
        assert lines[0].startswith("# ") and lines[1] == "", f.name
        assert lines[2].startswith("Machine: ") and (
            " · fingerprint " in lines[2] or lines[2].startswith("Machine: machine not recorded")), f.name
