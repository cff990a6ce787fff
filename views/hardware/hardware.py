"""Hardware: what this machine has (host CPU, GPUs, TPU, versions), which speed
options should pay off on it, and a quick benchmark that measures them.

UI only: the probe and its verdicts come from engine.hardware.verdicts (the probe runs
in a child process and is cached; this page never imports TensorFlow), the
benchmark runs detached via engine.bench.quick.start_background and is followed by a
fragment that re-reads its progress file, figures come from engine.charts.hardware.
"""
from __future__ import annotations

import streamlit as st

from views.components.common import one_line_errors
from views.hardware.benchmark import bench_section
from views.hardware.noise import noise_section
from views.hardware.probe import probe_section


def main() -> None:
    with one_line_errors("Hardware check"):
        probe_section()
    st.divider()
    with one_line_errors("Noise floor"):
        noise_section()
    st.divider()
    with one_line_errors("Quick benchmark"):
        bench_section()


if __name__ == "__main__":
    main()
