"""The CPU a worker spends importing Keras, its backend and the training code, side by side.

Every training worker, LR range test, benchmark worker and model check starts by importing
Keras on TensorFlow or JAX (engine.training.backends.use); on a 2-core CPU that is most of a
short run's CPU. Each round runs every variant once in a fresh process, in turn, and reads
its CPU time (user + system, all threads, from getrusage); prints the mean and spread per
variant and each variant's ratio to the first:

- ``collector on``: ``import keras, <backend>, engine.training.train`` with the default gc;
- ``use()``: what a worker does, ``backends.use(backend)`` (Keras imported with the collector
  off and scikit-learn kept out while it loads) then the training code;
- with ``--alt-path DIR``, both again with DIR first on PYTHONPATH (another version of a
  package installed there with ``pip install --target DIR PKG==VERSION``).

    .venv/bin/python benchmarks/import_cpu.py --rounds 8
    .venv/bin/python benchmarks/import_cpu.py --backend jax --alt-path /tmp/ml-dtypes-0.7.0
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PLAIN = """
import os
os.environ["KERAS_BACKEND"] = {backend!r}
from engine.training import backends
backends.keep_out(backends.UNUSED_IN_WORKER[{backend!r}])
import keras, {lib}, engine.training.train
"""
USE = """
from engine.training import backends
backends.use({backend!r})
import engine.training.train
"""
REPORT = "import ml_dtypes, keras; print(ml_dtypes.__version__, keras.__version__)"


def cpu_seconds(code: str, env: dict) -> float:
    """CPU-s (user + system) of a fresh `python -c code` in the repository root."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else platform.processor()."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--backend", choices=("tensorflow", "jax"), default="tensorflow")
    p.add_argument("--alt-path", type=Path, help="a folder put first on PYTHONPATH for two more variants")
    a = p.parse_args(argv)
    lib = "tensorflow" if a.backend == "tensorflow" else "jax"
    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    envs = {"": base}
    if a.alt_path:
        envs[f" [{a.alt_path}]"] = {**base, "PYTHONPATH": f"{a.alt_path}{os.pathsep}{ROOT}"}
    variants = {}
    for tag, env in envs.items():
        versions = subprocess.run([sys.executable, "-c", REPORT], env=env, capture_output=True, text=True).stdout.split()
        tag = f"{tag} (ml_dtypes {versions[0]}, keras {versions[1]})" if len(versions) == 2 else tag
        variants[f"collector on{tag}"] = (PLAIN.format(backend=a.backend, lib=lib), env)
        variants[f"use(){tag}"] = (USE.format(backend=a.backend), env)
    cpu = {name: [] for name in variants}
    for _ in range(a.rounds):
        for name, (code, env) in variants.items():
            cpu[name].append(cpu_seconds(code, env))
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; {a.backend}; {a.rounds} rounds, interleaved")
    first = statistics.mean(next(iter(cpu.values())))
    for name, xs in cpu.items():
        m = statistics.mean(xs)
        print(f"{name:70s} {m:5.2f} CPU-s (sd {statistics.stdev(xs):.2f})  x{m / first:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
