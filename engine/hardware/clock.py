"""The CPU's clock, measured: a chain of dependent integer adds runs at one add per cycle
on every x86-64 core since the Pentium Pro, so adds / seconds is the clock the core really
ran at (turbo included). /proc/cpuinfo's "cpu MHz" is no substitute: in a VM it is often
the TSC's nominal rate (2,596 MHz on a Zen 4 guest whose cores ran at 3.6 GHz).

The chain is 100 ``add rax, rdx`` per loop iteration (register to register: a renamer
cannot fold it, as some cores fold adds of small immediates), written as machine code
into an executable page and called through ctypes. No TensorFlow; about 0.2 s. Where
that cannot run (not x86-64, no executable memory), `measure` returns None with the reason.
"""
from __future__ import annotations

import ctypes
import mmap
import platform
import sys
import time

ADDS_PER_LOOP = 100


def _code() -> bytes:
    """x86-64 System V: f(n) runs n loops of ADDS_PER_LOOP dependent adds, returns n x ADDS_PER_LOOP."""
    head = bytes.fromhex("4889f9" "4831c0" "ba01000000")   # mov rcx, rdi; xor rax, rax; mov edx, 1
    body = bytes.fromhex("4801d0") * ADDS_PER_LOOP          # add rax, rdx (x100, each waits for the last)
    tail = bytes.fromhex("48ffc9")                          # dec rcx
    rel = -(len(body) + len(tail) + 6)                      # jnz back to the body's start
    return head + body + tail + b"\x0f\x85" + rel.to_bytes(4, "little", signed=True) + b"\xc3"


def _function():
    if platform.machine().lower() not in ("x86_64", "amd64") or sys.platform == "win32":
        raise OSError(f"the add chain is x86-64 System V code; this is {platform.machine()} {sys.platform}")
    code = _code()
    buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    fn = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64)(addr)
    return fn, buf


def measure(repeats: int = 200, loops: int = 20_000) -> dict:
    """The clock of the core this thread runs on, the best of `repeats` timings of
    `loops` x ADDS_PER_LOOP dependent adds (about 0.6 ms each at 3.5 GHz: short enough
    for a busy machine to leave many of them alone, so the fastest is the clock; with
    6 ms chains at load average 8 on 2 cores even the best read 0.9 GHz, with 0.6 ms
    ones 3.59 GHz, as on an idle machine).

    Returns: {'clock_hz': float | None, 'method': 'dependent add chain', 'adds', 'best_sec',
    'samples_hz': [per repeat], 'error': None | why it could not run}.
    """
    out = {"clock_hz": None, "method": "dependent add chain", "adds": loops * ADDS_PER_LOOP,
           "best_sec": None, "samples_hz": [], "error": None}
    try:
        fn, buf = _function()
    except (OSError, ValueError, TypeError, AttributeError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
        return out
    try:
        fn(loops)  # let the core leave its idle clock
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            got = fn(loops)
            dt = time.perf_counter() - t0
            if got != loops * ADDS_PER_LOOP:
                out["error"] = f"the add chain returned {got}, not {loops * ADDS_PER_LOOP}"
                return out
            best = min(best, dt)
            out["samples_hz"].append(round(loops * ADDS_PER_LOOP / dt))
        hz = loops * ADDS_PER_LOOP / best
        if not 0.3e9 < hz < 7e9:  # outside every CPU's range: the chain did not run as one add per cycle
            out["error"] = f"implausible clock {hz / 1e9:.2f} GHz"
            return out
        out.update(clock_hz=hz, best_sec=best)
        return out
    finally:
        del fn
        try:
            buf.close()
        except BufferError:  # ctypes still holds an export; the page goes with the process
            pass


def _main() -> int:
    r = measure()
    print(r["error"] or f"{r['clock_hz'] / 1e9:.3f} GHz ({r['method']}, best of {len(r['samples_hz'])})")
    return 0 if r["clock_hz"] else 1


if __name__ == "__main__":
    sys.exit(_main())
