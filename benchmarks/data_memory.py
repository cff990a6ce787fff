"""Peak memory of ``python -m engine data check`` on a zip of large photos.

Writes a zip of IMAGES JPEGs of WIDTHxHEIGHT pixels (smooth gradients with a
little noise, two class folders; 24 at 6000x4000 make a zip of about 13 MiB, as
in issue 13), runs ``python -m engine data check ZIP`` in a fresh process and
prints its peak resident memory (ru_maxrss from wait4), its wall time, exit
code and first message. Goal: under 300 MB for the 6000x4000 zip, which is
refused from the image headers, before any pixel is decoded.

    python benchmarks/data_memory.py [--images 24] [--width 6000] [--height 4000]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_MB = 300


def measure(zip_path: Path) -> dict:
    """Run `data check` on `zip_path` in a child; its peak RSS (MB), wall s, exit code, output."""
    env = {**os.environ, "SPEEDLAB_HOME": str(zip_path.parent / "home")}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "engine", "data", "check", str(zip_path)], cwd=str(ROOT),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    # communicate() has reaped the child; its own rusage is kept by the OS for RUSAGE_CHILDREN
    # (the only child this process waited for, so the maximum is this child's).
    import resource

    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return {"peak_mb": peak_kib / 1024, "wall_s": wall, "code": proc.returncode,
            "message": (err.strip().splitlines() or out.strip().splitlines() or [""])[0]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", type=int, default=24)
    p.add_argument("--width", type=int, default=6000)
    p.add_argument("--height", type=int, default=4000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        z = Path(tmp) / "photos.zip"
        # Generated in a child too, so that this process (and RUSAGE_CHILDREN) stays small.
        subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                        "from benchmarks.data_memory import make_zip; from pathlib import Path; "
                        "make_zip(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))",
                        str(ROOT), str(z), str(args.images), str(args.width), str(args.height)], check=True)
        size = z.stat().st_size / 2**20
        # The generator was a child as well: measure in a fresh grandchild so the maximum is data check's.
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from benchmarks.data_memory import measure; "
                "from pathlib import Path; print(json.dumps(measure(Path(sys.argv[2]))))")
        res = subprocess.run([sys.executable, "-c", code, str(ROOT), str(z)], capture_output=True, text=True,
                             check=True)
        import json

        r = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"data check on {args.images} JPEGs of {args.width}x{args.height} (zip {size:.1f} MiB): "
          f"exit {r['code']} in {r['wall_s']:.1f} s, peak RSS {r['peak_mb']:.0f} MB")
    print(f"first message: {r['message']}")
    print(f"goal peak RSS < {GOAL_MB} MB: {'met' if r['peak_mb'] < GOAL_MB else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
