"""Train page, the sidebar: every run setting as a widget bound to a RunConfig
field and to the URL, grouped (speed options first), each with its help line.
"""
from __future__ import annotations

import streamlit as st

from engine.config import (
    BACKBONES,
    BACKENDS,
    CYCLIC_MODES,
    DEVICE_TYPES,
    MODELS,
    MUON_CONV,
    NO_FLIP_DATASETS,
    OPTIMIZERS,
    PRECISIONS,
    SCHEDULES,
    SETTING_HELP,
    TTA_MODES,
)
from engine.data import meta as datasets_meta
from engine.hardware.machine import cpu_line, quick_facts
from views.components.common import number_format
from views.train.checks import DEFAULTS, cached_facts
from views.train.upload import (
    OWN_MODEL,
    dataset_description,
    follow_source_run,
    model_upload_controls,
    parse_labels,
    saved_runs,
    upload_controls,
)

HARDWARE_PAGE = "views/hardware/hardware.py"


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
        if kw["key"] in st.session_state:  # its value is there (a preset, the LR finder, a saved run set it):
            if kw.get("value") is not None:  # a default beside it makes Streamlit warn in the server log
                del kw["value"]  # (a None default stays: no warning, and the box may be empty)
            kw.pop("index", None)
        value = getattr(self.c, widget)(label, persist_state="session", **kw)
        self.values[name] = value
        self.c.caption(SETTING_HELP[name])
        # A container, not st.empty: a field may get several true messages at once (the
        # cached hardware hint and the live CPU's warning); each must stay visible.
        self.slots[name] = self.c.container()
        return value

    def select(self, name, label, options, **kw):
        return self.field(name, "selectbox", label, options=options,
                          index=list(options).index(getattr(DEFAULTS, name)), **kw)

    def number(self, name, label, **kw):
        """A number input; a float one (a float `step`) shows every digit of its value
        (common.number_format: 0.965 is never "0.96", 1e-7 never "0.00000")."""
        kw.setdefault("value", getattr(DEFAULTS, name))
        if isinstance(kw.get("step"), float):
            shown = st.session_state.get(kw.get("key", name), kw["value"])
            kw["format"] = number_format(shown if isinstance(shown, (int, float)) else None, kw["step"])
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
        f.slots["synthetic_shape"] = sb.container()
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
    pending = st.session_state.pop("_select_model_file", None)  # set by a successful .keras upload
    if pending:
        st.session_state["model"], st.session_state["model_file"] = OWN_MODEL, pending
    # No format_func on a control bound to the URL: Streamlit writes the shown label into the
    # link, so a label that differs from the value would come back as "not accepted".
    model = f.select("model", "Model (own: your .py function or .keras file)", (*MODELS, OWN_MODEL))
    if model == OWN_MODEL:
        own_model_controls(f, sb)
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
        f.number("finetune_lr_factor", "Fine-tune LR factor (after unfreezing)", step=0.05)


def own_model_controls(f: Form, sb) -> None:
    """'Model: your own': a path on the server typed by its user (file.py:build or model.keras,
    bound to the URL as model_file), weights kept or not for a .keras file, and a .keras upload
    where uploads are allowed. The engine checks the file (engine.config.preflight.check_user_model,
    in a process of its own: this page imports no framework); its one line shows under Model."""
    path = sb.text_input("Model file on this server", key="model_file", bind="query-params",
                         persist_state="session", placeholder="examples/my_model.py:build or path/to/model.keras",
                         help="A Python file and the function that builds the model, build(input_shape, "
                              "num_classes) -> keras.Model, or a saved .keras model. Python runs only from a "
                              "path typed here, never from an upload.")
    f.values["model"] = (path or "").strip()  # the engine names an empty path
    if f.values["model"].lower().endswith(".keras"):
        f.select("model_weights", "Weights of the .keras model (keep: start from them; fresh: "
                 "architecture only)", ("keep", "fresh"))
    model_upload_controls(sb)


def speed_controls(f: Form, sb) -> None:
    """Speed options: precision, devices, batch, steps per execution, XLA."""
    sb.markdown("#### Speed options")
    if cached_facts() is None:
        sb.page_link(HARDWARE_PAGE, label="Run the hardware check", icon=":material/memory:",
                     help="See which of these options should pay off on this machine (a few seconds)")
    f.select("backend", "Keras backend", BACKENDS)
    f.select("precision", "Precision", PRECISIONS)
    f.select("device_type", "Device type", DEVICE_TYPES)
    sb.caption(_machine_line())
    f.number("devices", "Number of devices (replicas per worker)", step=1)
    if "workers" in SETTING_HELP:
        f.number("workers", "Worker processes", step=1)
    f.number("batch_size", "Global batch size (samples)", step=32)
    bs = f.values["batch_size"]
    devices, workers = f.values["devices"] or 1, f.values.get("workers") or 1
    replicas = devices * workers
    if bs and bs % replicas == 0:
        layout = (f" ({devices} device{'s' if devices > 1 else ''} × {workers} workers)"
                  if workers > 1 else "")
        f.slots["batch_size"].markdown(
            f"Per-replica batch: **{bs // replicas}** samples on each of {replicas} replicas{layout}"
            if replicas > 1 else f"One replica: the whole batch of **{bs}** samples on one device")
    f.number("steps_per_execution", "Steps per execution", step=1)
    if f.values["backend"] == "jax":  # JAX compiles every step with XLA: nothing to choose
        f.values["jit_compile"] = True
        sb.markdown(":material/check_box: XLA (jit_compile): always on with JAX")
        f.slots["jit_compile"] = sb.container()
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
    f.number("learning_rate", "Learning rate", step=1e-4)
    if f.values["optimizer"] == "sgd":
        f.number("momentum", "Momentum", step=0.05)
    if f.values["optimizer"] == "muon":
        f.select("muon_conv", "Muon on conv filters", MUON_CONV)
    f.number("target_accuracy", "Target validation accuracy (0-1, optional)", value=None, step=0.01, placeholder="none")
    technique_controls(f, sb)


def technique_controls(f: Form, sb) -> None:
    """The 'Record-setting techniques' expander (airbench94, the NanoGPT speedrun): weight EMA,
    CutMix, gradient accumulation with its effective batch, test-time augmentation and
    progressive resizing; each caption says what it does and where it comes from."""
    exp = sb.expander("Record-setting techniques", icon=":material/trophy:")
    f.c = exp
    f.number("ema_momentum", "Weight EMA momentum (0 = off)", step=0.01)
    f.number("cutmix_factor", "CutMix factor (0 = off)", step=0.1)
    f.number("gradient_accumulation_steps", "Gradient accumulation (batches per update)", step=1)
    k, bs = f.values["gradient_accumulation_steps"], f.values.get("batch_size")
    if isinstance(k, int) and k > 1 and bs:
        f.slots["gradient_accumulation_steps"].markdown(f"Effective batch: **{bs * k}** samples per update "
                                                        f"({k} x {bs})")
    modes = [m for m in TTA_MODES if "flip" not in m or f.values.get("dataset") not in NO_FLIP_DATASETS]
    if st.session_state.get("tta") not in modes:
        st.session_state.pop("tta", None)  # a flip mode kept from another data set
    f.select("tta", "Test-time augmentation", modes)
    f.number("progressive_epochs", "Progressive resizing: epochs at a smaller size (0 = off)", step=1)
    if f.values["progressive_epochs"]:
        f.number("progressive_scale", "Progressive resizing: image side (share of full)", step=0.05)
    f.c = sb


def schedule_controls(f: Form, sb) -> None:
    """The 'Schedule and regularisation' expander: each schedule's own settings
    appear when it is picked (the LR preview and the LR range test are drawn
    after validation, see lr_preview and lr_finder)."""
    exp = sb.expander("Schedule and regularisation")
    f.c = exp
    schedule = f.select("schedule", "Learning-rate schedule", SCHEDULES)
    f.number("warmup_epochs", "Warmup epochs", step=0.5)
    f.number("max_lr", "Max learning rate (cyclic / one_cycle)", value=None, step=1e-3, placeholder="10x the base")
    if schedule == "cyclic":
        mode = f.select("cyclic_mode", "Cyclic mode", CYCLIC_MODES)
        f.number("half_cycle_epochs", "Half cycle (epochs)", step=0.5)
        if mode == "exp_range":
            f.number("cyclic_gamma", "Cyclic gamma (per step)", step=0.001)
    elif schedule == "one_cycle":
        f.number("one_cycle_pct_start", "Ramp-up share of training", step=0.05)
        f.number("one_cycle_div_factor", "Start divisor (start LR = max LR / this)", step=5.0)
        f.number("one_cycle_final_div_factor", "Final divisor (final LR = start LR / this)",
                 step=1000.0)
    elif schedule == "warmup_step":
        f.number("step_decay_epochs", "Epochs between decays", step=0.5)
        f.number("step_decay_rate", "Decay factor", step=0.05)
    elif schedule == "constant":
        f.field("reduce_on_plateau", "toggle", "Reduce LR on plateau", value=DEFAULTS.reduce_on_plateau)
    f.field("scale_lr", "toggle", "Scale LR with batch size", value=DEFAULTS.scale_lr)
    if f.values["scale_lr"]:
        f.number("reference_batch_size", "Reference batch size", step=32)
    f.number("label_smoothing", "Label smoothing", step=0.05)
    f.number("mixup_alpha", "Mixup alpha", step=0.1)
    f.preview_slot = exp.container()
    f.lr_find_slot = exp.container()
    f.c = sb


def advanced_controls(f: Form, sb) -> None:
    """Seed and validation split, tucked away in a small 'Advanced' expander."""
    f.c = sb.expander("Advanced")
    f.number("seed", "Random seed", step=1)
    f.number("validation_fraction", "Validation fraction (0-0.5)", step=0.05)
    f.number("validation_seed", "Validation split seed", step=1)
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
