"""A hardware probe's answer planted in the probe cache, as `python -m engine hardware` leaves it.

The real probe is a child process that imports TensorFlow and JAX (about 12 CPU-s); a page test
or a browser test of the Hardware page reads this planted answer instead.
`tests/test_hardware.py::test_real_probe_on_this_machine` runs the real one.
No framework here: a page test's process may import it.
"""
from __future__ import annotations

import json

# A probe's facts (engine.hardware.verdicts, "Facts") of a 4-core CPU without native bf16.
FACTS = {
    "hostname": "testhost", "probed_at": 1_700_000_000.0, "probe_seconds": 3.2,
    "host": {"cpu_model": "Test CPU", "physical_cores": 4, "logical_cores": 8, "usable_cpus": 8,
             "cpu_flags": ["avx2", "fma"], "ram_gib": 16.0, "os": "Linux", "arch": "x86_64"},
    "software": {"python": "3.11.7", "tensorflow": "2.21.0", "keras": "3.15.1"},
    "build": {"is_cuda_build": False},
    "gpus": [], "driver": {"gpus": [], "version": None},
    "tpu": {"hint": False, "cores": 0, "error": None}, "errors": [],
}


def plant_probe(facts: dict | None = None) -> dict:
    """Write `facts` (default FACTS) as this machine's cached probe in $SPEEDLAB_HOME/hardware.json
    (engine.hardware.verdicts.cache_path, under its cache_key; the file's other entries, such as
    the peak record, kept), so that the Hardware page and the Train page's hints read it and start
    no probe. Returns the facts written. Raises: ValueError when the file there is not JSON."""
    from engine.hardware import verdicts

    facts = dict(FACTS if facts is None else facts)
    path = verdicts.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    cache = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**cache, verdicts.cache_key(): facts}))
    return facts
