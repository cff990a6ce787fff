"""Train (landing page): set the speed-up options, launch a run next to its
baseline, and watch throughput, loss and speedup live.

UI only: validation, launching, speedups and figures all come from `engine`.
Run state lives in the store (not in st.session_state), so reloading the tab
or opening a second one re-attaches to the active run. The script never
blocks on training: a fragment re-reads the store about once a second.
"""
from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from engine.jobs import background
from engine.report import chart_style, live_refresh, train_charts
from engine.data import meta as datasets_meta
from engine.lr_find import range_test as lr_find
from engine.autopilot import search as autopilot
from engine.jobs import runner
from engine.jobs import demo
from engine.transfer_source import saved_model_path
from engine.data import userdata
from engine.report.compare import (backend_speedup, compare, effective_target, live_summary, not_reached,
                                   progress, time_to_accuracy)
from engine.report.table import incomplete_note
from engine.config import baseline_config
from engine.config import (BACKBONES, BACKENDS, CYCLIC_MODES, DEVICE_TYPES, FIELD_HELP, MODELS, OPTIMIZERS,
                           PRECISIONS, SCHEDULES, ConfigError, RunConfig)
from engine.preflight import check_runnable
from engine.hardware.machine import cpu_line, quick_facts
from engine.report.live import LiveMetrics
from engine.store import ACTIVE_STATUSES, EPOCH_COLS, Store
from views import comparison as cmp_view
from views import limits, talk, url_params
from views.common import autopilot_run, one_line_errors

try:  # optional engine modules, written in parallel: their widgets are skipped if absent
    from engine import lr_math
except ImportError:
    lr_math = None
try:
    from engine.hardware import verdicts as hardware
except ImportError:
    hardware = None

LIVE_REFRESH_S = 1.0   # live charts while a run is queued or running
# Learning rate, worker CPU and memory, data wait: redrawn at most this often while a run
# is live (their figures are kept in between), since drawing them every second cost
# about a third of a live refresh's server CPU (benchmarks/live_view.py).
SLOW_REFRESH_S = 5.0
PAGE_BUDGET_S = 900.0  # a comparison launched here adds no pair that would end after 15 min
QUIET_REFRESH_S = 5.0  # while a comparison measures: progress only (the page must not slow the run)
WATCH_REFRESH_S = 3.0  # idle: notice a run launched from another tab or the CLI
DEFAULTS = RunConfig()
LINK_SETTINGS = frozenset(FIELD_HELP)  # every run setting a link may carry (RunConfig's fields)
OPTIONAL = ("target_accuracy", "max_lr", "init_from")  # None means "not set" for these fields
HARDWARE_PAGE = "views/hardware.py"
BACKEND_LABELS = {"tensorflow": "TensorFlow", "jax": "JAX"}
VERDICT_COLORS = {"faster": "green", "slower": "red", "neutral": "gray", "unavailable": "violet",
                  "measure": "orange"}
# LR range test: the sweep's range and length (engine.lr_find.range_test defaults).
LR_SWEEP = {"min_lr": 1e-6, "max_lr": 1.0, "steps": 100}
# Settings that change an LR sweep's curve: an older sweep with other values is flagged.
LR_SWEEP_FIELDS = ("dataset", "model", "batch_size", "optimizer", "momentum", "precision", "devices",
                   "label_smoothing", "mixup_alpha")
PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
# Small charts (three in a row, the sidebar previews): Plotly's tool bar covered their
# titles (drag still zooms, a double click resets).
SMALL_CONFIG = {**PLOTLY_CONFIG, "displayModeBar": False}
log = logging.getLogger("speedlab.dashboard")




# --- controls -----------------------------------------------------------------

class Form:
    """Widgets bound to RunConfig fields: each gets a one-line help caption and
    a placeholder right under it for the engine's message about that field."""

    def __init__(self, container):
        self.c = container
        self.values: dict = {}
        self.slots: dict = {}

    def field(self, name: str, widget: str, label: str, **kw):
        # Bound to the URL: a configuration is shareable and survives page switches.
        kw.setdefault("key", name)
        kw.setdefault("bind", "query-params")
        value = getattr(self.c, widget)(label, persist_state="session", **kw)
        self.values[name] = value
        self.c.caption(FIELD_HELP[name])
        self.slots[name] = self.c.empty()
        return value

    def select(self, name, label, options, **kw):
        return self.field(name, "selectbox", label, options=options,
                          index=list(options).index(getattr(DEFAULTS, name)), **kw)

    def number(self, name, label, **kw):
        kw.setdefault("value", getattr(DEFAULTS, name))
        return self.field(name, "number_input", label, **kw)


def controls(sb) -> Form:
    """All settings, grouped, in the sidebar, speed options first. Ranges are
    left to the engine (no min_value on the boxes it checks) so that the value
    on screen is applied and its one-line message names that value and the fix."""
    f = Form(sb)
    speed_controls(f, sb)  # first: what SpeedLab is about, visible without scrolling
    data_controls(f, sb)
    model_controls(f, sb)
    training_controls(f, sb)
    return f


def data_controls(f: Form, sb) -> None:
    """Data set (built-in, Keras, registered user data), label subset, the
    upload expander and the input-pipeline options."""
    pending = st.session_state.pop("_select_dataset", None)  # set by a successful upload
    if pending:
        st.session_state["dataset"] = pending
    sb.markdown("#### Data")
    # A typed path is a new option: checked like the CLI's --dataset PATH (the engine's message below).
    f.select("dataset", "Data set", dataset_options(), accept_new_options=True)
    about = sb.empty()
    if f.values["dataset"] == "synthetic":
        text = sb.text_input("Synthetic image shape (H,W,C)", "32,32,3", key="synthetic_shape",
                             bind="query-params", persist_state="session")
        try:
            f.values["synthetic_shape"] = tuple(int(p) for p in text.split(","))
        except ValueError:
            f.values["synthetic_shape"] = (text,)  # the engine names the problem
        f.slots["synthetic_shape"] = sb.empty()
        f.number("synthetic_classes", "Synthetic classes", min_value=2, step=1)
        f.number("synthetic_samples", "Synthetic samples", min_value=4, step=256)
    else:
        text = f.field("label_subset", "text_input", "Label subset (optional)", value="",
                       placeholder="all labels, e.g. 5,6,7,8,9")
        f.values["label_subset"] = parse_labels(text)
        line = dataset_description(f.values["dataset"], f.values["label_subset"])
        if line:
            about.caption(f":material/dataset: {line}")
    upload_controls(sb)
    pipe = sb.expander("Input pipeline", icon=":material/conveyor_belt:")
    f.c = pipe
    f.field("data_parallel_map", "toggle", "Parallel map (preprocess on several threads)",
            value=DEFAULTS.data_parallel_map)
    f.field("data_prefetch", "toggle", "Prefetch (prepare the next batches during the step)",
            value=DEFAULTS.data_prefetch)
    f.field("data_cache", "toggle", "Cache (preprocess once, keep in memory)", value=DEFAULTS.data_cache)
    pipe.caption(":material/info: The live view shows, per execution, how long the step waited for "
                 "data versus computed." + (" This data set is float32 already: there is no preprocessing "
                                            "stage, so parallel map and cache change little."
                                            if f.values["dataset"] in ("digits", "synthetic") else ""))
    f.c = sb


def model_controls(f: Form, sb) -> None:
    """Model (own models and keras.applications backbones with image size and
    ImageNet weights), saving the model, and starting from a saved run."""
    sb.markdown("#### Model")
    model = f.select("model", "Model", MODELS)
    if model in BACKBONES:
        f.number("image_size", "Image size (pixels a side, 0 = native 224)", step=32)
        f.field("pretrained", "toggle", "Pretrained (ImageNet)", value=DEFAULTS.pretrained)
    f.field("save_model", "toggle", "Save the trained model", value=DEFAULTS.save_model)
    saved = saved_runs()
    opts = [None, *saved]
    if st.session_state.get("init_from") not in opts:
        st.session_state.pop("init_from", None)  # the run was deleted, or never saved a model
    f.field("init_from", "selectbox", "Start from a saved run", options=opts, index=0,
            format_func=lambda i: "no: fresh weights" if i is None else saved.get(i, f"run #{i}"),
            on_change=follow_source_run, args=(saved,), bind=None)  # run ids are this store's: not in links
    if not saved:
        f.slots["init_from"].caption("No saved model yet: turn on **Save the trained model** for a run "
                                     "(or run the transfer demo on the Runs page) to start later runs from it.")
    if f.values.get("init_from") is not None or f.values.get("pretrained"):
        f.number("freeze_epochs", "Frozen epochs (only the new head learns)", step=1)
        f.number("finetune_lr_factor", "Fine-tune LR factor (after unfreezing)", step=0.05, format="%.3f")


def speed_controls(f: Form, sb) -> None:
    """Speed options: precision, devices, batch, steps per execution, XLA."""
    sb.markdown("#### Speed options")
    if hardware is not None and _cached_facts() is None:
        sb.page_link(HARDWARE_PAGE, label="Run the hardware check", icon=":material/memory:",
                     help="See which of these options should pay off on this machine (a few seconds)")
    f.select("backend", "Keras backend", BACKENDS)
    f.select("precision", "Precision", PRECISIONS)
    f.select("device_type", "Device type", DEVICE_TYPES)
    sb.caption(_machine_line())
    f.number("devices", "Number of devices (replicas per worker)", step=1)
    if "workers" in FIELD_HELP:
        f.number("workers", "Worker processes", step=1)
    f.number("batch_size", "Global batch size (samples)", step=32)
    bs = f.values["batch_size"]
    devices, workers = f.values["devices"] or 1, f.values.get("workers") or 1
    replicas = devices * workers
    if bs and bs % replicas == 0:
        layout = (f" ({devices} device{'s' if devices > 1 else ''} × {workers} workers)"
                  if workers > 1 else "")
        f.slots["batch_size"].markdown(f"Per-replica batch: **{bs // replicas}** samples on each of "
                                       f"{replicas} replica{'s' if replicas > 1 else ''}{layout}")
    f.number("steps_per_execution", "Steps per execution", step=1)
    if f.values["backend"] == "jax":  # JAX compiles every step with XLA: nothing to choose
        f.values["jit_compile"] = True
        sb.markdown(":material/check_box: XLA (jit_compile): always on with JAX")
        f.slots["jit_compile"] = sb.empty()
    else:
        f.field("jit_compile", "toggle", "XLA (jit_compile)", value=DEFAULTS.jit_compile)
    if f.values["backend"] == "jax":  # a TensorFlow technique: XLA already fuses a JAX step
        f.values["fused_optimizer"] = False
    else:
        f.field("fused_optimizer", "toggle", "Fused optimizer update", value=DEFAULTS.fused_optimizer)


def training_controls(f: Form, sb) -> None:
    """Epochs, optimizer, learning rate, momentum and the target accuracy."""
    sb.markdown("#### Training")
    f.number("epochs", "Epochs", step=1)
    f.select("optimizer", "Optimizer", OPTIMIZERS)
    f.number("learning_rate", "Learning rate", step=1e-4, format="%.5f")
    if f.values["optimizer"] == "sgd":
        f.number("momentum", "Momentum", step=0.05, format="%.2f")
    f.number("target_accuracy", "Target validation accuracy (0-1, optional)", value=None, step=0.01,
             format="%.2f", placeholder="none")


def parse_labels(text: str) -> tuple:
    """'5,6,7,8,9' or '5-9' -> (5, 6, 7, 8, 9); '' -> (). Anything else is
    passed on as text so that the engine's message names the problem."""
    text = (text or "").strip()
    if not text:
        return ()
    out = []
    for part in (p.strip() for p in text.split(",")):
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        if m and int(m[1]) <= int(m[2]):
            out += range(int(m[1]), int(m[2]) + 1)
        elif re.fullmatch(r"\d+", part):
            out.append(int(part))
        else:
            return (text,)
    return tuple(out)


def dataset_description(name: str, labels: tuple = ()) -> str | None:
    """One line about a data set (size, shape, classes), restricted to `labels`
    when they are usable; None when the engine cannot describe it (its message
    then appears under the selector)."""
    try:
        info = datasets_meta.dataset_info(name)
    except Exception:  # noqa: BLE001 - validation shows the engine's message
        return None
    try:
        if labels:
            info = datasets_meta.apply_subset(info, labels)
    except Exception:  # noqa: BLE001 - the label subset's own message says why
        pass
    shape = "x".join(str(v) for v in info.shape)
    line = (f"{info.samples:,} images of {shape}, {info.classes} classes"
            + (f" (labels {','.join(map(str, info.labels))})" if info.labels else "")
            + (f", {info.test_samples:,} test images" if info.test_samples else ""))
    if info.source == "download":
        line += " · not in the Keras cache: downloaded on first use"
    return line


def saved_runs() -> dict[int, str]:
    """{run id: label} of completed runs that saved their model, newest first."""
    store = Store()
    try:
        out = {}
        for r in store.list_runs(["completed"]):
            if saved_model_path(store, r) is None:
                continue
            c = r["config"]
            data = c.get("dataset", "?") + (" labels " + ",".join(map(str, c["label_subset"]))
                                            if c.get("label_subset") else "")
            acc = (r.get("summary") or {}).get("final_val_accuracy")
            out[r["id"]] = (f"#{r['id']} · {data} · {c.get('model')}"
                            + (f" · val acc {acc:.3f}" if acc is not None else ""))
        return out
    finally:
        store.close()


def follow_source_run(saved: dict) -> None:
    """init_from callback: the new run takes the source run's model (and image
    size), which transfer requires; the engine checks the rest."""
    rid = st.session_state.get("init_from")
    if rid is None:
        return
    store = Store()
    try:
        run = store.get_run(rid)
    finally:
        store.close()
    if not run:
        return
    src = run["config"]
    if src.get("model") in MODELS:
        st.session_state["model"] = src["model"]
    if src.get("model") in BACKBONES:
        st.session_state["image_size"] = src.get("image_size") or 0
        st.session_state["pretrained"] = False  # init_from and ImageNet weights exclude each other


# --- user data upload ------------------------------------------------------------

def suggested_name(filename: str) -> str:
    """A usable data set name from an uploaded file's name ('My digits.npz' -> 'My_digits')."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(filename).stem).strip("._-")[:64]
    return stem or "upload"


def upload_controls(sb) -> None:
    """'Upload data': a .npz or a .zip of class folders, checked and registered
    as user:NAME by the engine (nothing is left behind when it is rejected);
    every fault is one line; a registered data set is selected above."""
    n = st.session_state.get("_upload_n", 0)  # a new key empties the uploader after a success
    flash = st.session_state.pop("upload_flash", None)
    exp = sb.expander("Upload data", icon=":material/upload_file:", expanded=bool(flash))
    if flash:
        exp.success(flash, icon=":material/check_circle:")
    file = exp.file_uploader(".npz (x_train, y_train, optional x_test, y_test) or .zip of class folders",
                             type=["npz", "zip"], key=f"upload_file_{n}")
    exp.caption("Images (N, H, W) or (N, H, W, C) with C = 1 or 3, uint8 0..255 or floats in [0, 1]; "
                "labels 0..K-1. A .zip holds one sub-folder per class (cats/, dogs/, ...) of "
                "equally sized images.")
    exp.caption(":material/info: " + userdata.limits_line(st.get_option("server.maxUploadSize")))
    name = exp.text_input("Name", key="upload_name", placeholder=suggested_name(file.name) if file else "my_data",
                          help="Letters, digits, '_', '-', '.'; it is offered as user:NAME")
    overwrite = exp.checkbox("Replace a data set of this name", key="upload_replace")
    have = userdata.registered()
    if have:
        exp.caption("Registered: " + ", ".join(f"`user:{h}`" for h in have))
    if not exp.button("Check and register", key="upload_register", icon=":material/playlist_add_check:",
                      disabled=file is None, width="stretch"):
        return
    name = (name or "").strip() or suggested_name(file.name)
    try:
        with exp, st.spinner(f"Checking {file.name} ..."):
            info = userdata.register_upload(name, file.name, file.getvalue(), overwrite=overwrite)
    except userdata.DataError as e:
        exp.caption(f":material/block: **{file.name} was not registered** ({len(e.problems)} problem"
                    f"{'s' if len(e.problems) > 1 else ''}); nothing was kept:")
        for line in e.problems:
            exp.error(line)
        return
    except Exception as e:  # noqa: BLE001 - e.g. a full disk: one line, not a traceback
        log.exception("registering an upload failed")
        exp.error(f"{file.name} was not registered: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")
        return
    shape = "x".join(str(v) for v in info.shape)
    st.session_state["upload_flash"] = (f"Registered **user:{name}**: {info.samples:,} images of {shape}, "
                                        f"{info.classes} classes" + (f", {info.test_samples:,} test images"
                                                                     if info.test_samples else "")
                                        + ". Selected above.")
    st.session_state["_select_dataset"] = f"user:{name}"
    st.session_state["_upload_n"] = n + 1
    st.rerun()


def schedule_controls(f: Form, sb) -> None:
    """The 'Schedule and regularisation' expander: each schedule's own settings
    appear when it is picked (the LR preview and the LR range test are drawn
    after validation, see lr_preview and lr_finder)."""
    exp = sb.expander("Schedule and regularisation")
    f.c = exp
    schedule = f.select("schedule", "Learning-rate schedule", SCHEDULES)
    f.number("warmup_epochs", "Warmup epochs", step=0.5, format="%.1f")
    f.number("max_lr", "Max learning rate (cyclic / one_cycle)", value=None, step=1e-3,
             format="%.3g", placeholder="10x the base")
    if schedule == "cyclic":
        mode = f.select("cyclic_mode", "Cyclic mode", CYCLIC_MODES)
        f.number("half_cycle_epochs", "Half cycle (epochs)", step=0.5, format="%.1f")
        if mode == "exp_range":
            f.number("cyclic_gamma", "Cyclic gamma (per step)", step=0.001, format="%.4f")
    elif schedule == "one_cycle":
        f.number("one_cycle_pct_start", "Ramp-up share of training", step=0.05, format="%.2f")
        f.number("one_cycle_div_factor", "Start divisor (start LR = max LR / this)", step=5.0,
                 format="%g")
        f.number("one_cycle_final_div_factor", "Final divisor (final LR = start LR / this)",
                 step=1000.0, format="%g")
    elif schedule == "warmup_step":
        f.number("step_decay_epochs", "Epochs between decays", step=0.5, format="%.1f")
        f.number("step_decay_rate", "Decay factor", step=0.05, format="%.2f")
    elif schedule == "constant":
        f.field("reduce_on_plateau", "toggle", "Reduce LR on plateau", value=DEFAULTS.reduce_on_plateau)
    f.field("scale_lr", "toggle", "Scale LR with batch size", value=DEFAULTS.scale_lr)
    if f.values["scale_lr"]:
        f.number("reference_batch_size", "Reference batch size", step=32)
    f.number("label_smoothing", "Label smoothing", step=0.05, format="%.2f")
    f.number("mixup_alpha", "Mixup alpha", step=0.1, format="%.2f")
    f.preview_slot = exp.container()
    f.lr_find_slot = exp.container()
    f.c = sb


def advanced_controls(f: Form, sb) -> None:
    """Seed and validation split, tucked away in a small 'Advanced' expander."""
    f.c = sb.expander("Advanced")
    f.number("seed", "Random seed", step=1)
    f.number("validation_fraction", "Validation fraction (0-0.5)", step=0.05, format="%.2f")
    f.c = sb


def dataset_options() -> list[str]:
    """Built-in data sets plus registered user data sets (when the engine has them)."""
    try:
        return list(datasets_meta.available_datasets())
    except Exception:  # noqa: BLE001 - older engine, or an unreadable registry
        return list(datasets_meta.DATASET_NAMES)


def _machine_line() -> str:
    m = quick_facts()
    gpus = f"{m['gpus']} GPU ({', '.join(m['gpu_names'])})" if m["gpus"] else "no GPU"
    return f"This machine: {cpu_line(m)}, {gpus}" + (", TPU" if m["tpu"] else "")


def validate(values: dict) -> tuple:
    """(config or None, the engine's one-line error or None, the field it is
    about, warnings). Never raises: no traceback may reach the page."""
    for k, v in values.items():
        if v is None and k not in OPTIONAL:
            return None, f"{k}: the box is empty; enter a value (default {getattr(DEFAULTS, k)})", k, []
    try:
        cfg = RunConfig.from_dict(values)
        return cfg, None, None, check_runnable(cfg)
    except ConfigError as e:
        return None, str(e), e.field, []
    except Exception as e:  # noqa: BLE001 - e.g. an empty number box: one line, not a traceback
        return None, f"{type(e).__name__}: {e}", None, []


def _warning_field(line: str) -> str:
    """Which control a check_runnable warning is about."""
    if line.startswith("dataset:"):
        return "dataset"
    if "image_size" in line:
        return "image_size"
    return "devices" if "replica" in line else "precision" if "float16" in line else "device_type"


def _cached_facts() -> dict | None:
    """The cached hardware check, or None (probing starts TF: not done here)."""
    try:
        return hardware.cached_facts() if hardware is not None else None
    except Exception:  # noqa: BLE001 - an unreadable cache is "no check yet"
        return None


def hardware_hints(cfg: RunConfig) -> dict:
    """{field: one-line hint with a coloured verdict} from the cached hardware
    check (engine.hardware.verdicts), for precision, devices and XLA; empty when no
    check has been run yet (the sidebar then links to the Hardware page)."""
    facts = _cached_facts()
    if not facts:
        return {}
    try:
        by = {v["option"]: v for v in hardware.verdicts(facts, cfg.device_type)}

        def line(option: str) -> str:
            v = by[option]
            return f":{VERDICT_COLORS.get(v['verdict'], 'gray')}-badge[{v['verdict']}] {v['reason']}"

        hints = {"jit_compile": line("xla"), "devices": line("multi_device")}
        b = next((v for v in hardware.backend_verdicts(facts, cfg.device_type) if v["backend"] == cfg.backend),
                 None)
        if b is not None:
            hints["backend"] = (f":{VERDICT_COLORS.get(b['verdict'], 'gray')}-badge[{b['verdict']}] "
                                f"{BACKEND_LABELS[b['backend']]} {b['version'] or ''}: {b['reason']}")
        if cfg.backend == "jax":
            hints.pop("jit_compile")
        if cfg.precision != "float32":
            hints["precision"] = line(cfg.precision)
        else:
            better = [o for o in ("mixed_bfloat16", "mixed_float16") if by[o]["verdict"] == "faster"]
            hints["precision"] = (f":green-badge[tip] {better[0]} should be faster here: "
                                  f"{by[better[0]]['reason']}" if better else
                                  "float32: the baseline precision; no low-precision hardware judged "
                                  "faster here")
        return hints
    except Exception:  # noqa: BLE001 - a stale or partial cache only costs the hints
        return {}


def lr_preview(cfg: RunConfig, container) -> None:
    """The schedule's learning rate (and momentum) per step, from engine.lr_math."""
    if lr_math is None or not hasattr(lr_math, "preview"):
        return
    try:
        p = lr_math.preview(cfg, cfg.steps_per_epoch())
        df = pd.DataFrame({k: p[k] for k in ("step", "lr", "momentum") if k in p})
    except Exception as e:  # noqa: BLE001
        container.caption(f"LR preview unavailable: {type(e).__name__}: {e}")
        return
    container.markdown("**Learning-rate preview**")
    container.plotly_chart(train_charts.lr_preview_figure(df, cfg.steps_per_epoch()), key="lr_preview",
                           config=SMALL_CONFIG)


def use_max_lr(value: float) -> None:
    """Button callback (runs before the controls are drawn): set the max LR control."""
    st.session_state["max_lr"] = value


def _sweep_differs(result: dict, cfg: RunConfig) -> list[str]:
    """Settings (LR_SWEEP_FIELDS) in which a stored sweep differs from `cfg`."""
    old = result.get("config") or {}
    now = cfg.to_dict()
    return [k for k in LR_SWEEP_FIELDS if k in old and old[k] != now.get(k)]


def lr_finder(cfg: RunConfig | None, was_running: bool) -> None:
    """Body of the LR range test fragment (in the schedule expander): the
    button, the sweep's progress while it runs, then its loss-vs-LR chart and
    'Use as max LR'. Re-reads lr-find-progress.json on every tick."""
    with one_line_errors("LR range test"):
        p = lr_find.read_progress()
        running = bool(p) and p["state"] in background.ACTIVE_STATES
        if running != was_running:  # started elsewhere, or finished: redraw the sidebar
            st.rerun()
        st.markdown("**Learning-rate range test**")
        if running:
            st.progress(min(p.get("elapsed", 0) / 60.0, 0.95),
                        text=f":material/search: Sweeping the LR {LR_SWEEP['min_lr']:g} → "
                             f"{LR_SWEEP['max_lr']:g} over up to {p.get('steps')} batches · "
                             f"{p.get('elapsed', 0):.0f} s")
            if st.button("Cancel the sweep", icon=":material/stop:", key="lr_find_cancel"):
                lr_find.cancel_background()
                st.rerun()
            return
        if st.button("Find learning rate", icon=":material/search:", key="lr_find_start",
                     disabled=cfg is None, width="stretch",
                     help=f"Train the current model for up to {LR_SWEEP['steps']} batches with the LR "
                          f"rising from {LR_SWEEP['min_lr']:g} to {LR_SWEEP['max_lr']:g}, in the "
                          "background (Smith 2017); suggests a max LR"):
            try:
                lr_find.start_background(cfg, **LR_SWEEP)
                st.rerun()
            except (ConfigError, lr_find.LRFindError) as e:
                st.warning(str(e), icon=":material/hourglass_top:")
                return
        res = lr_find.load_latest()
        if p and p["state"] == "failed" and (p.get("finished") or 0) > ((res or {}).get("created") or 0):
            st.error(f"The LR range test failed: {p.get('error') or 'no message'}", icon=":material/error:")
        if not res:
            st.caption("Sweeps the learning rate upwards on your data and model and suggests the "
                       "largest one that still trains well, as max LR for cyclic / one_cycle.")
            return
        sug = res.get("suggestion") or {}
        df = pd.DataFrame({"lr": res["lr"], "loss": res["loss"], "smoothed": res["smoothed"]})
        st.plotly_chart(train_charts.lr_find_figure(df, sug.get("suggested"), sug.get("min_loss_lr")),
                        key="lr_find_chart", config=SMALL_CONFIG)
        differs = _sweep_differs(res, cfg) if cfg else []
        if differs:
            st.caption(f":material/info: This sweep used other settings ({', '.join(differs)}): "
                       "press Find learning rate again for the current ones.")
        value = sug.get("suggested")
        if value is None:
            why = sug.get("reason") or "the sweep gave no finite loss"
            st.warning(why[0].upper() + why[1:] if why.startswith("no ") else f"No suggestion: {why}",
                       icon=":material/block:")
            return
        value = float(f"{value:.3g}")
        st.caption(f"Suggested max LR **{value:.3g}** ({sug.get('reason')})")
        st.button(f"Use {value:.3g} as max LR", icon=":material/check:", key="lr_find_use",
                  on_click=use_max_lr, args=(value,), width="stretch",
                  help="Sets Max learning rate above; it is used by the cyclic and one_cycle schedules")
        if cfg is not None and cfg.schedule not in ("cyclic", "one_cycle"):
            st.caption("Max LR takes effect with the cyclic or one_cycle schedule.")


# --- launching ------------------------------------------------------------------

def active_message(run: dict) -> str:
    return (f"Run #{run['id']} ({chart_style.run_label(run)}) is {run['status']}: one run at a time keeps "
            "measurements clean. Wait for it to finish or press Stop.")


def launch(cfg: RunConfig, with_baseline: bool, out, reuse: bool = False) -> None:
    """Queue `cfg` as a comparison of interleaved pairs with its baseline
    (engine.jobs.comparison; `reuse`: one run against a stored baseline instead,
    said so with its age), or alone; or say which run is active instead."""
    store = Store()
    try:
        active = runner.active_run(store)
    finally:
        store.close()
    if active and not autopilot_run(active):
        out.warning(active_message(active), icon=":material/hourglass_top:")
        return
    busy = background.busy() or demo.demo_busy()  # the autopilot, a benchmark, LR range test or the demo
    if busy:
        out.warning(f"Not launched: {busy}", icon=":material/hourglass_top:")
        return
    try:
        if with_baseline and not reuse and baseline_config(cfg) != cfg:
            from engine import store_comparisons as cstore
            from engine.jobs import comparison

            cid = comparison.start(cfg, budget_s=PAGE_BUDGET_S)
            store = Store()
            try:
                plan = cstore.get(store, cid)["plan"]
            finally:
                store.close()
            bid, rid = plan[0]["baseline_id"], plan[0]["run_id"]
            msg = (f"Queued comparison #{cid}: up to {len(plan)} interleaved pairs of baseline and run "
                   f"(first: baseline #{bid}, run #{rid}), until the 95% interval is within ±10% "
                   f"or {PAGE_BUDGET_S / 60:.0f} min")
        elif with_baseline:
            bid, rid, reused = runner.launch_with_baseline(cfg, reuse=reuse)
            if bid == rid:
                msg = f"Queued run #{rid}: it is its own baseline (float32, 1 device, no options on)"
            elif reused:
                msg = f"Reusing stored baseline #{bid} (as asked); queued run #{rid}: one pair, no interval"
            else:
                msg = f"Queued baseline #{bid}, then run #{rid}"
        else:
            (rid,) = runner.submit([cfg])
            msg = f"Queued run #{rid} (no baseline)"
        # Shown by the live view while one of the launched runs is still queued, then gone.
        st.session_state["launched"] = {"msg": msg, "ids": [rid] if not with_baseline else [bid, rid]}
    except runner.ActiveRunError as e:  # another tab launched in between
        out.warning(active_message(e.run), icon=":material/hourglass_top:")
    except ConfigError as e:
        out.error(str(e))
    except Exception as e:  # noqa: BLE001
        out.error(f"Could not launch: {type(e).__name__}: {e}")


# --- the current comparison (from the store) ----------------------------------

def own_active(store: Store) -> list[dict]:
    """Queued and running runs launched here or from `engine run`: the
    autopilot's runs are followed on the Autopilot page, not here."""
    return [r for r in store.active_runs() if not autopilot_run(r)]


def machine_busy() -> str | None:
    """One line while another job holds the machine (the autopilot, the quick benchmark, an
    LR range test, the transfer demo), else None; the Train page's own runs show below it."""
    p = autopilot.read_progress()
    if p and p["state"] in background.ACTIVE_STATES:
        return (f"The autopilot is searching ({p.get('elapsed', 0):.0f} s so far): its runs show on the "
                "**Autopilot** page, and Launch waits until it ends (or stop it there).")
    line = background.busy()
    if line and not line.startswith("run #"):  # said before Launch is pressed, not only after
        return f"Launch waits: {line}."
    return None


def current_comparison(store: Store) -> tuple[list[dict], dict | None, dict | None]:
    """(runs of the newest group, oldest first; its baseline; its run).

    A group holds the baseline and the run launched together. When the
    baseline was reused from an earlier group, the newest matching stored
    baseline stands in; when a config is its own baseline, both are the same run.
    Imported runs (run bundles) are left to the Runs and Replay pages, the
    autopilot's runs to the Autopilot page (`autopilot_run`).
    """
    runs = [r for r in store.list_runs() if not r.get("origin") and not autopilot_run(r)]
    if not runs:
        return [], None, None
    gid = runs[0]["group_id"]
    group = [r for r in reversed(runs) if r["group_id"] == gid] if gid else [runs[0]]
    if (gid or "").startswith("cmp-"):  # a comparison: its current pair (engine.jobs.comparison)
        pair = _current_pair(group)
        if pair:
            return pair, pair[0], pair[1]
    base = next((r for r in group if r["role"] == "baseline"), None)
    # An autopilot group (a trial, a runoff or an ablation run) has neither role: its run is shown.
    run = next((r for r in group if r["role"] == "run"), None) or base or group[-1]
    if base is None and run is not None and run.get("baseline_id"):  # the baseline it was launched against
        base = store.get_run(run["baseline_id"])
    if base is None and run is not None:
        try:
            base = runner.find_baseline(store, RunConfig.from_dict(run["config"]))
        except ConfigError:
            base = None
    return group, base, run


def comparison_block(store: Store, comp: dict) -> None:
    """A comparison's headline, details and pair chart (views/comparison.py)."""
    left, right = st.columns([1.3, 2.4], gap="medium")
    with left:
        cmp_view.headline(comp, cmp_view.noise_floor(store))
        cmp_view.details(comp)
    with right:
        cmp_view.pairs_chart(comp)


def _signature(comp: dict | None) -> tuple | None:
    """What changes a measuring comparison's block: its id, pairs done and status."""
    if comp is None:
        return None
    return comp["id"], len((comp.get("result") or {}).get("history") or []), comp["status"]


def _current_pair(group: list[dict]) -> list[dict] | None:
    """[baseline, run] of a comparison's pair being measured (else its last complete
    pair), from the group's runs (oldest first; a pair's two runs are adjacent)."""
    pairs = [group[i:i + 2] for i in range(0, len(group) - 1, 2)]
    pairs = [sorted(p, key=lambda r: r["role"] != "baseline") for p in pairs]
    live = next((p for p in pairs if any(r["status"] == "running" for r in p)), None)
    done = [p for p in pairs if all(r["status"] == "completed" for r in p)]
    started = [p for p in pairs if any(r.get("started") for r in p)]
    return live or (done or started or pairs[:1] or [None])[-1]


def _chief(df: pd.DataFrame) -> pd.DataFrame:
    """System samples of the first process only: a multi-worker run samples every
    worker, and their lines would interleave."""
    return df[df["worker"].fillna(0) == 0] if "worker" in df.columns else df


def _live(store: Store) -> LiveMetrics:
    """This session's incremental reader of run metrics, bound to this tick's store."""
    if "live_metrics" not in st.session_state:
        st.session_state["live_metrics"] = LiveMetrics()
    return st.session_state["live_metrics"].use(store)


def _frames(src: LiveMetrics, runs: list[dict]) -> dict[str, pd.DataFrame]:
    """Executions (at most chart_style.MAX_POINTS per run, warm-up kept), epochs and
    system rows of `runs`, tagged with label/colour: what the charts draw."""
    src.keep(r["id"] for r in runs)
    def shown(r: dict) -> pd.DataFrame:
        execs = src.executions(r)
        return src.memo(r, execs, "display", lambda: chart_style.downsample(execs))

    read = {"executions": shown,
            "epochs": lambda r: pd.DataFrame(src.epochs(r), columns=list(EPOCH_COLS)),
            "system": lambda r: _chief(src.system(r))}
    out = {}
    for table, fn in read.items():
        parts = [chart_style.tag(fn(r), chart_style.run_label(r), chart_style.run_color(r["id"], r["role"]), r["id"])
                 for r in runs]
        parts = [p for p in parts if not p.empty]
        out[table] = pd.concat(parts, ignore_index=True) if parts else None
    return out


def status_line(store: Store, run: dict, src: LiveMetrics | None = None) -> tuple[str, float | None]:
    """(one markdown line about a run, progress fraction while it runs)."""
    name = f"**{chart_style.run_label(run)}**"
    st_ = run["status"]
    if st_ == "queued":
        return f":material/hourglass_empty: {name}: queued", None
    p = progress(store, run["id"], source=src) or {}
    if st_ == "running":
        if not p.get("total_steps"):
            return f":material/settings: {name}: setting up (devices, data, model)", 0.0
        left = p.get("time_left_sec")
        left = ("warming up" if left is None else "< 1 s left" if left < 1 else f"{left:.0f} s left")
        line = (f":material/play_circle: {name}: epoch {p['epoch']}/{p['epochs']} · step "
                f"{p['step']}/{p['total_steps']} · {p['elapsed_sec']:.1f} s elapsed · {left}")
        return line, p["fraction"]
    summ = live_summary(store, run, *((src.executions(run), src.epochs(run), src) if src else ()))
    sps = summ.get("samples_per_sec")
    rate = f" · {sps:,.0f} samples/s" if sps else ""
    lost = incomplete_note(run.get("summary"))
    rate += f" · :orange[{lost}]" if lost else ""
    if st_ == "completed":
        wall = summ.get("wall_sec")
        return (f":material/check_circle: {name}: completed"
                + (f" in {wall:.1f} s" if wall else "") + rate), None
    if st_ == "cancelled":
        return (f":material/stop_circle: {name}: cancelled at step {p.get('step', 0)}/"
                f"{p.get('total_steps') or '?'} (partial charts kept){rate}"), None
    return f":material/error: {name}: failed: {run.get('error') or 'no message'}", None


def launched_banner(runs: list[dict]) -> None:
    """'Queued baseline #n, then run #m' while a run launched from this tab is still queued."""
    launched = st.session_state.get("launched")
    if not launched:
        return
    status = {r["id"]: r["status"] for r in runs}
    if any(status.get(i) == "queued" for i in launched["ids"]):
        st.success(launched["msg"], icon=":material/rocket_launch:")
    else:
        del st.session_state["launched"]


def render_comparison(store: Store, group: list[dict], base: dict | None, run: dict | None,
                      stop: bool = True, source=None, comp: dict | None = None) -> None:
    """Status, Stop (unless `stop` is False: a replay has nothing to stop),
    speedup and the live charts of the current comparison. The Replay page draws
    through here too, with `store` an engine.report.replay.ReplayStore and
    `source` its metrics (default: this session's LiveMetrics). `comp`: the stored
    comparison of interleaved pairs the runs belong to (default: looked up in `store`):
    its headline, interval, verdict and pair chart lead; while it measures, the page
    stays quiet (progress only: the live charts would slow the run they measure)."""
    comp = comp or cmp_view.lookup(store, run)
    launched_banner(group)
    shown = [r for r in ([base] if base and base not in group else []) + group]
    active = any(r["status"] in ACTIVE_STATUSES for r in group)
    src = source or _live(store)
    head, stop_col = st.columns([6, 1], vertical_alignment="center")
    with head:
        for r in shown:
            line, frac = status_line(store, r, src)
            if frac is not None:
                st.progress(min(max(frac, 0.0), 1.0), text=line)
            else:
                st.markdown(line)
    with stop_col:
        if stop and active and st.button("Stop", icon=":material/stop:", key="stop", type="primary",
                                help="Cancel the active run(s); their metrics stay in the store"):
            st.toast("; ".join(cancel_own()) or "nothing to stop")
    for w in dict.fromkeys(w for r in shown for w in (r.get("summary") or {}).get("warnings") or []):
        st.caption(f":material/info: {w}")
    quiet = source is None and comp is not None and comp["status"] == "running" and active
    if comp is not None and not quiet:
        comparison_block(store, comp)
    if quiet:  # the headline and pair chart are drawn outside the live fragment (main)
        st.caption(":material/speed: Quiet while measuring: the live charts are drawn once the comparison "
                   "ends, so that the page does not slow the runs it measures (progress every "
                   f"{QUIET_REFRESH_S:.0f} s).")
        return
    if comp is not None and base and run and base["id"] != run["id"]:
        st.markdown(f"**This pair** (seed {run['config'].get('seed')}): baseline #{base['id']} vs run #{run['id']}")

    # By id: the stored baseline found for a run may be that very run (its config is its own baseline).
    runs = ([base] if base else []) + ([run] if run and (base is None or run["id"] != base["id"]) else [])
    frames = _frames(src, runs)
    cmp = (compare(store, base["id"], run["id"], source=src) if base and run and base["id"] != run["id"]
           else None)
    own = own_time(base, run, src)
    # compare() has just computed both steady medians: reuse them rather than recompute.
    medians = ({chart_style.run_label(base): cmp["baseline_samples_per_sec"], chart_style.run_label(run): cmp["samples_per_sec"]}
               if cmp else {chart_style.run_label(r): live_summary(store, r, src.executions(r), src.epochs(r), src)
                            .get("samples_per_sec") for r in runs})

    # Wide enough for "3.42× faster" beside the sidebar at 1280 px (tests/test_talk_browser.py).
    left, right = st.columns([1.3, 2.4], gap="medium")
    with left:
        if comp is None:
            cmp_view.reused_line(base, run)
        speedup_panel(base, run, cmp, own, pair_of=comp)
        backend_line(store, run)
        limits.headline(store, run or base, src)
    with right:
        st.plotly_chart(train_charts.throughput_figure(frames["executions"], medians), key="throughput",
                        config=PLOTLY_CONFIG)
    time_row(base, run, cmp)
    kinds = {chart_style.run_label(r): train_charts.train_loss_kind(r.get("config")) for r in runs}
    c1, c2 = st.columns(2, gap="medium")
    c1.plotly_chart(train_charts.loss_figure(frames["executions"], frames["epochs"], x="t", loss_kinds=kinds),
                    key="loss_t", config=PLOTLY_CONFIG)
    c2.plotly_chart(train_charts.loss_figure(frames["executions"], frames["epochs"], x="step", loss_kinds=kinds),
                    key="loss_step", config=PLOTLY_CONFIG)
    # The live Train page keeps its slower charts a few seconds; a replay (source given) redraws all.
    slow = _Slow(runs) if source is None else None
    data_wait_row(src, runs, frames["executions"], slow)
    limits.flops_chart(store, runs, frames["executions"], src)
    loss_scale_row(src, runs, frames["executions"])
    s1, s2, s3 = st.columns(3, gap="medium")
    execs, system = frames["executions"], frames["system"]
    s1.plotly_chart(_kept(slow, "lr", execs, lambda: train_charts.lr_figure(execs)), key="lr", config=SMALL_CONFIG)
    s2.plotly_chart(_kept(slow, "cpu", system, lambda: train_charts.system_figure(
        system, "cpu_percent", "CPU (% of a core)", "Worker CPU")), key="cpu", config=SMALL_CONFIG)
    s3.plotly_chart(_kept(slow, "mem", system, lambda: train_charts.system_figure(
        system, "rss_mb", "memory (RSS, MB)", "Worker memory")), key="mem", config=SMALL_CONFIG)


class _Slow:
    """This session's slower charts for `runs`: a value is rebuilt once it is
    SLOW_REFRESH_S old or the runs shown (ids, statuses) changed, so a run's end
    is drawn at once. Kept in st.session_state, one entry per key."""

    def __init__(self, runs: list[dict]):
        self.sig = tuple((r["id"], r["status"]) for r in runs)
        self.cache = st.session_state.setdefault("slow_charts", {})
        for key in [k for k, hit in self.cache.items() if hit[0] != self.sig]:
            del self.cache[key]  # drawn for other runs: never shown again

    def get(self, key: str, build):
        now = time.monotonic()
        hit = self.cache.get(key)
        if hit is None or hit[0] != self.sig or now - hit[1] >= SLOW_REFRESH_S:
            hit = self.cache[key] = (self.sig, now, build())
        return hit[2]


def _kept(slow: _Slow | None, key: str, frame: pd.DataFrame | None, build):
    """build(), or its kept value while `slow` keeps it; never kept while `frame`
    is still empty (the first points show at once)."""
    return slow.get(key, build) if slow is not None and frame is not None and not frame.empty else build()


def loss_scale_row(src: LiveMetrics, runs: list[dict], execs: pd.DataFrame | None) -> None:
    """For float16 runs (they record a loss scale): the loss scale and the
    optimizer updates skipped per execution, and a warning when any were skipped."""
    if execs is None or "loss_scale" not in execs or execs["loss_scale"].isna().all():
        return
    st.plotly_chart(train_charts.loss_scale_figure(execs), key="loss_scale", config=PLOTLY_CONFIG)
    for r in runs:
        g = src.executions(r)  # all of them: the chart's rows are thinned
        skipped = int(g["skipped"].fillna(0).sum()) if "skipped" in g else 0
        if skipped:
            st.caption(f":material/warning: {chart_style.run_label(r)}: {skipped:,} of {int(g['batches'].sum()):,} "
                       "updates skipped (gradients not finite under float16 loss scaling); steps count batches run")


def data_wait_row(src: LiveMetrics, runs: list[dict], execs: pd.DataFrame | None,
                  slow: _Slow | None = None) -> None:
    """Per run: how long each execution waited for input versus computed, and a
    one-line verdict (input-bound or compute-bound). Runs whose data wait is
    not measured (multi-worker, TPU: NULL) get a short note instead. `slow`:
    keeps each run's verdict and chart a few seconds (see render_comparison)."""
    cols = st.columns(len(runs), gap="medium") if runs else []
    for col, r in zip(cols, runs):
        rows = execs[execs["run_id"] == r["id"]] if execs is not None and "run_id" in execs else None
        note, verdict, fig = _kept(slow, f"data_wait_{r['id']}", rows, lambda: _data_wait(src, r, rows))
        with col:
            if note:
                st.caption(note)
                continue
            if verdict:  # the verdict first, then the evidence
                st.markdown(verdict)
            st.plotly_chart(fig, key=f"data_wait_{r['id']}", config=PLOTLY_CONFIG)


def _data_wait(src: LiveMetrics, r: dict, rows: pd.DataFrame | None) -> tuple:
    """(a note instead of the chart, or None; the verdict line or None; the figure or None)
    for run `r`, whose display rows are `rows`."""
    label = chart_style.run_label(r)
    if rows is None or rows.empty:
        return f"**{label}** · data wait vs compute: waiting for the first execution ...", None, None
    if train_charts.data_wait_frame(rows).empty:
        cfg = r.get("config") or {}
        why = ("multi-worker runs" if cfg.get("workers", 1) > 1 else "TPU runs"
               if cfg.get("device_type") == "tpu" else "this run")
        note = ("waiting for the first steady execution ..." if rows["data_wait"].notna().any()
                else f"not measured for {why} (the input meter does not run there)")
        return f":material/info: **{label}** · data wait vs compute: {note}", None, None
    share = (r.get("summary") or {}).get("data_wait_share") if r["status"] == "completed" else None
    if share is None:
        execs_r = src.executions(r)  # all of them: the chart's rows are thinned
        share = src.memo(r, execs_r, "data_wait_share", lambda: train_charts.data_wait_share(execs_r))
    verdict = train_charts.data_wait_verdict(share)
    line = None
    if verdict:
        kind, text = verdict
        color = {"input-bound": "red", "partly input-bound": "orange"}.get(kind, "green")
        line = f"**{label}** · :{color}-badge[{kind}] {text[len(kind) + 2:]}"
    return None, line, train_charts.data_wait_figure(rows, title="Data wait vs compute")


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}×"


def own_time(base: dict | None, run: dict | None, src) -> tuple | None:
    """(target, seconds to it or None, 'Not reached ... . ' or '') when `run` is its own
    baseline (`base` the same run), else None; `src` gives its epoch rows."""
    if not (run and base and run["id"] == base["id"]):
        return None
    goal, epochs = effective_target(run), src.epochs(run)
    note = not_reached(run, epochs, goal)
    return goal, time_to_accuracy(epochs, goal), f"{note[0].upper()}{note[1:]}. " if note else ""


def speedup_panel(base: dict | None, run: dict | None, cmp: dict | None, own: tuple | None = None,
                  pair_of: dict | None = None) -> None:
    """The headline: time-to-accuracy speedup (what the clock says), then the
    end-to-end and steady throughput speedups, smaller, each with what it means.
    own: `own_time` of a run that is its own baseline: its time to target is shown instead.
    pair_of: the comparison this pair belongs to (its headline is shown above): the
    figures are labelled as one pair's. While a side still runs, no ratio is shown
    (mid-run, end-to-end read 0.06x, 0.30x, 0.41x before settling near 0.9x)."""
    if base is None:
        st.metric("Time-to-accuracy speedup", "—", border=True)
        if run is not None and run.get("role") in autopilot.ROLES:
            st.caption("An autopilot run with no stored baseline of its settings here: the autopilot's "
                       "speedups (against the user's batch) are on the **Autopilot** page.")
        else:
            st.caption("No baseline for this run: turn on **Compare with baseline** and launch again "
                       "to measure the speedup.")
        return
    if cmp is None:  # the run is its own baseline
        # Not "1.00×": that read as a measured result, also for a run that never reached the target.
        # Its own time to target is what it measured: shown (a first user saw only "—").
        goal, secs, note = own or (None, None, "")
        if goal is None:
            st.metric("Time-to-accuracy speedup", "—", border=True,
                      help="This configuration is the baseline itself (float32, 1 device, no options).")
        else:
            st.metric(f"Time to {goal:g} val accuracy", f"{secs:.2f} s" if secs is not None else "—", border=True,
                      help="seconds from the start of training to the first validation at or above the target; "
                           "this configuration is the baseline itself (float32, 1 device, no options)")
        st.caption(note + "This run is its own baseline: nothing to compare. Turn on a speed option (precision, "
                   "devices, steps per execution, XLA) to compare.")
        return
    if base["status"] in ACTIVE_STATUSES or run["status"] in ACTIVE_STATUSES:
        st.metric("Speedup of this pair · in progress", "—", border=True,
                  help="held back until both sides have ended: a ratio of a run still warming up means nothing")
        st.caption("One pair is one sample: " + ("the comparison's interval above is what to read." if pair_of else
                   "turn off **Reuse stored baseline** for interleaved pairs with an interval."))
        return
    target = cmp.get("target_accuracy")
    tt = cmp.get("time_to_accuracy_speedup")
    label = f"time to {target:g} val accuracy" if target is not None else "time to accuracy"
    if pair_of is not None:
        label = f"this pair: {label}"
    if tt is not None:
        st.metric(label, f"{tt:.2f}× faster" if tt >= 1 else f"{tt:.2f}× slower",
                  delta=f"{cmp['baseline_time_to_accuracy_sec']:.1f} s → {cmp['time_to_accuracy_sec']:.1f} s",
                  delta_color="normal" if tt >= 1 else "inverse", border=True,
                  help="seconds from the start of training to the first validation at or above the "
                       f"target: baseline #{base['id']} vs run #{run['id']}")
    else:
        notes = [f"baseline: {cmp['baseline_time_to_accuracy_note']}" if cmp.get("baseline_time_to_accuracy_note")
                 else None, f"run: {cmp['time_to_accuracy_note']}" if cmp.get("time_to_accuracy_note") else None]
        st.metric(label, "—", border=True)
        st.caption("; ".join(n for n in notes if n) if any(notes) else
                   "Set a target validation accuracy (Training) to compare time to accuracy.")
    e2e, steady = cmp.get("end_to_end_speedup"), cmp.get("steady_speedup")
    # One under the other: side by side, "2.97×" is cut to "2.9…" beside the sidebar at 1280 px.
    st.metric("End-to-end", _x(e2e), border=True,
             help="training samples / wall time of training (warm-up, validation and everything "
                  "else inside fit included), run vs baseline")
    st.metric("Steady", _x(steady), border=True,
             help="median samples/s per execution after the warm-up, run vs baseline: what the "
                  "device does, not what the clock says")
    st.caption("**End-to-end**: samples per second of wall time while training. **Steady**: per-step "
               "throughput after warm-up.")
    for key in ("notice", "setup_notice"):
        if cmp.get(key):
            st.warning(cmp[key], icon=":material/schedule:")
    for line in cmp["caveats"]:
        st.caption(f":material/warning: {line}")


def time_row(base: dict | None, run: dict | None, cmp: dict | None) -> None:
    """Where the time went: baseline and run side by side (once each has ended)."""
    if cmp is None:
        return
    rows = [(f"baseline #{base['id']}", cmp.get("baseline_breakdown")), (f"run #{run['id']}", cmp.get("breakdown"))]
    if not any(b for _, b in rows):
        return
    st.plotly_chart(train_charts.time_figure(rows), key="time_parts", config=PLOTLY_CONFIG)
def backend_line(store: Store, run: dict | None) -> None:
    """The backend speedup: this run against the same configuration stored on the
    other Keras backend (engine.report.compare.backend_speedup), or how to get one."""
    if run is None or run["status"] != "completed":
        return
    b = backend_speedup(store, run["id"])
    if b is None:
        if (run.get("config") or {}).get("backend") == "jax":
            st.caption(":material/compare_arrows: Backend speedup: no TensorFlow run of this configuration "
                       "is stored yet; launch it with Keras backend TensorFlow to compare the backends.")
        return
    x = b["steady_speedup"]
    st.metric(f"Backend speedup ({b['backend']} vs {b['other_backend']})", "—" if x is None else f"{x:.2f}×",
              border=True, help=f"steady samples/s of run #{run['id']} on {b['backend']} / run "
                                f"#{b['baseline_id']}, the same configuration on {b['other_backend']}"
                                + (" (with XLA)" if b["other_jit_compile"] else ""))
    st.caption(f"Backend speedup **{'—' if x is None else f'{x:.2f}×'}**: {b['backend']} run #{run['id']} "
               f"vs {b['other_backend']} run #{b['baseline_id']}, same configuration.")


def live_view(was_active: bool, drawn: tuple | None = None, phase: str | None = None) -> None:
    """Body of the live fragment: re-reads the store on every tick. `drawn`: the
    `_signature` of the measuring comparison whose block main() drew outside this
    fragment; a new pair (or its end) redraws the page. `phase`: the live_refresh
    phase main() set the interval for; a change (warm-up over) redraws the page."""
    with one_line_errors("Live view"):
        store = Store()
        try:
            runner.reconcile(store)
            group, base, run = current_comparison(store)
            own = own_active(store)
            active = bool(own)
            if active != was_active:  # a run ended or started elsewhere: refresh the whole page
                st.rerun()
            if phase is not None and live_refresh.phase(store, [r["id"] for r in own]) != phase:
                st.rerun()  # past the warm-up, or a new run starting: a new interval
            if drawn is not None and _signature(cmp_view.lookup(store, run)) != drawn:
                st.rerun()
            if not group:
                n_ap = sum(autopilot_run(r) for r in store.list_runs())
                st.info("No runs yet: set options on the left and press **Launch**. The baseline "
                        "(float32, 1 device) runs first, then your run; throughput, loss and the "
                        "speedup appear here live. With no speed option on, your run is the baseline "
                        "itself: turn one on (e.g. precision mixed_bfloat16) to see a speedup." + (f" (The autopilot's runs, {n_ap} so far, are on the "
                                                        "**Autopilot** and **Runs** pages.)" if n_ap else ""),
                        icon=":material/arrow_back:")
                return
            render_comparison(store, group, base, run)
        finally:
            store.close()


def watch(ap_was_busy: bool) -> None:
    """Idle watcher: re-attaches when a run starts from another tab or the CLI,
    and redraws when the autopilot starts or ends (its banner, Launch)."""
    store = Store()
    try:
        if own_active(store) or bool(machine_busy()) != ap_was_busy:
            st.rerun()
    finally:
        store.close()


def cancel_own() -> list[str]:
    """Cancel the active runs this page shows (never the autopilot's): one line each."""
    store = Store()
    try:
        runs = own_active(store)
    finally:
        store.close()
    return [runner.cancel(r["id"]) for r in sorted(runs, key=lambda r: r["status"] != "queued")]


def prewarm() -> None:
    """Have a warm spare worker ready before Launch (once per session; the spare
    imports TensorFlow in its own process, never in this one)."""
    if not st.session_state.get("prewarmed"):
        with one_line_errors("Starting a spare worker"):
            runner.prewarm()
        st.session_state["prewarmed"] = True


def main() -> None:
    link = url_params.snapshot()  # before any control rewrites the URL
    prewarm()
    sb = st.sidebar
    f = controls(sb)
    schedule_controls(f, sb)
    advanced_controls(f, sb)
    cfg, error, err_field, warnings = validate(f.values)
    hints = hardware_hints(cfg) if cfg else {}
    for name, hint in hints.items():
        f.slots[name].caption(hint)
    for w in warnings:
        f.slots.get(_warning_field(w), sb).warning(w, icon=":material/info:")
    if error:
        f.slots.get(err_field, sb).error(error, icon=":material/error:")
    if cfg:
        lr_preview(cfg, f.preview_slot)
    sweep = lr_find.read_progress()
    sweeping = bool(sweep) and sweep["state"] in background.ACTIVE_STATES
    with f.lr_find_slot:
        st.fragment(lr_finder, run_every=LIVE_REFRESH_S if sweeping else None)(cfg, sweeping)

    if talk.is_on():
        return talk_main(cfg, error, url_params.check(link, [*f.values, "synthetic_shape"], LINK_SETTINGS))
    head, mode = st.columns([5, 1.3], vertical_alignment="bottom")
    head.markdown("### SpeedLab · Train")
    talk.toggle(mode)
    c1, c2, c3 = st.columns([2, 1.3, 3.2], vertical_alignment="center")
    with_baseline = c1.toggle("Compare with baseline", value=True, key="with_baseline",
                              bind="query-params", persist_state="session",
                              help="Run the float32, 1-device baseline first (or reuse a stored "
                                   "one that matches) and report the speedup over it.")
    reuse = c1.toggle("Reuse stored baseline", value=False, key="reuse_baseline", disabled=not with_baseline,
                      help="Off (default): the baseline is measured fresh, in interleaved pairs with your run, "
                           "for an interval and a verdict. On: one run against the newest matching stored "
                           "baseline of this machine (its age is shown); one pair, no interval.")
    pending = url_params.check(link, [*f.values, "synthetic_shape", "with_baseline"], LINK_SETTINGS)
    clicked = c2.button("Launch", type="primary", icon=":material/rocket_launch:", key="launch",
                        disabled=cfg is None or bool(pending), width="stretch")
    if cfg is None:
        c3.error(f"Launch is disabled: {error}", icon=":material/block:")
    else:
        c3.caption(chart_style.config_summary(cfg.to_dict()) + f" · {cfg.steps_per_epoch()} steps/epoch")
    if pending:
        url_params.show(pending, st.container())
    messages = st.container()
    ap_busy = machine_busy()
    if ap_busy:
        messages.info(ap_busy, icon=":material/travel_explore:")
    if clicked and cfg is not None and not pending:
        launch(cfg, with_baseline, messages, reuse=reuse)

    active = any_active()
    # While a run is active the live view re-reads the store every second; when
    # idle it is drawn once and a cheap watcher looks for new runs. While a comparison
    # measures, its headline and pair chart are drawn here, once per pair, and the
    # fragment only moves the progress lines every QUIET_REFRESH_S.
    live = measuring() if active else None
    if live is not None:
        with one_line_errors("Comparison"):
            store = Store()
            try:
                comparison_block(store, live)
            finally:
                store.close()
    # A plain run redraws every second while it starts, every 3 s once steady (live_refresh).
    phase = live_phase() if active and live is None else None
    st.fragment(live_view, run_every=(QUIET_REFRESH_S if live else live_refresh.refresh_s(phase)) if active
                else None)(active, _signature(live), phase)
    if not active:
        st.fragment(watch, run_every=WATCH_REFRESH_S)(bool(ap_busy))


def live_phase() -> str | None:
    """engine.report.live_refresh.phase of this page's active runs (None if the store cannot be read)."""
    with one_line_errors("Reading the store"):
        store = Store()
        try:
            return live_refresh.phase(store, [r["id"] for r in own_active(store)])
        finally:
            store.close()
    return None


def measuring() -> dict | None:
    """The comparison of interleaved pairs that is running, or None (the page then stays quiet)."""
    from engine.jobs import comparison

    with one_line_errors("Reading the store"):
        store = Store()
        try:
            return comparison.running(store)
        finally:
            store.close()
    return None


def any_active() -> bool:
    """Whether a run is queued or running (dead workers settled first); False when the
    store cannot be read (its one-line error is shown)."""
    with one_line_errors("Reading the store"):
        store = Store()
        try:
            runner.reconcile(store)
            return bool(own_active(store))
        finally:
            store.close()
    return False


def talk_main(cfg: RunConfig | None, error: str | None, pending: list[str]) -> None:
    """Presenter mode (views/talk.py): one row with the configuration, Launch,
    Stop and the mode toggle, then the headline and two charts, live. The
    settings stay in the (collapsed) sidebar; the baseline is compared as the
    'Compare with baseline' toggle was last set (on by default). `pending`:
    settings from the link that were not taken (url_params); Launch waits for them."""
    talk.style()
    active = any_active()
    ap_busy = machine_busy()
    summary, launch_col, stop_col, mode = st.columns([4.7, 1.2, 1.1, 1.8], vertical_alignment="center")
    summary.container(key="talk_config").markdown(talk_config_line(cfg, error))
    clicked = launch_col.button("Launch", type="primary", icon=":material/rocket_launch:", key="launch",
                                disabled=cfg is None or active or bool(pending), width="stretch")
    if stop_col.button("Stop", icon=":material/stop:", key="stop", disabled=not active, width="stretch"):
        st.toast("; ".join(cancel_own()) or "nothing to stop")
    talk.toggle(mode)
    if ap_busy:
        st.info(ap_busy, icon=":material/travel_explore:")
    if pending:
        url_params.show(pending, st.container())
    if clicked and cfg is not None and not pending:
        with_baseline = st.query_params.get("with_baseline", "true").lower() != "false"
        launch(cfg, with_baseline, talk.Toasts())  # the fragment notices the new run and redraws
        if st.session_state.get("launched"):
            st.toast(st.session_state["launched"]["msg"], icon=":material/rocket_launch:")
    st.fragment(talk_view, run_every=(QUIET_REFRESH_S if measuring() else LIVE_REFRESH_S) if active
                else WATCH_REFRESH_S)(active, bool(ap_busy))


def talk_config_line(cfg: RunConfig | None, error: str | None) -> str:
    """Presenter mode's top line: the configuration Launch starts. Named "Next" when
    the run on screen is another one (a new tab starts from the defaults, and the line read
    as the label of the charts below); "Next" keeps it on one line at 1280 px."""
    if cfg is None:
        return f":material/block: {error}"
    line = chart_style.config_summary(cfg.to_dict())
    store = Store()
    try:
        _, _, run = current_comparison(store)
    finally:
        store.close()
    if run is None or chart_style.config_summary(run["config"]) == line:
        return line
    return f":material/skip_next: Next: {line}"


def talk_view(was_active: bool, ap_was_busy: bool = False) -> None:
    """Body of presenter mode's live fragment: the current comparison, re-read
    from the store on every tick (as live_view)."""
    with one_line_errors("Live view"):
        store = Store()
        try:
            runner.reconcile(store)
            group, base, run = current_comparison(store)
            # A run or the autopilot started or ended: Launch, Stop and the autopilot's line follow.
            if bool(own_active(store)) != was_active or bool(machine_busy()) != ap_was_busy:
                st.rerun()
            if not group:
                st.info("No runs yet: press **Launch** (settings in the sidebar, **>** at the top left).",
                        icon=":material/rocket_launch:")
                return
            talk.comparison(store, base, run)
        finally:
            store.close()


if __name__ == "__main__":
    main()
