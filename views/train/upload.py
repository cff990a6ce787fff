"""Train page, the sidebar's data parts: uploading a data set (registered in
engine.data.userdata), the label subset, and transfer from a stored run's model.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path

import streamlit as st

from engine.base import plain
from engine.charts import style as chart_style
from engine.config import BACKBONES, MAX_MODEL_KERAS_BYTES, MODELS, ConfigError, inputs
from engine.data import meta as datasets_meta
from engine.data import userdata
from engine.store import Store
from engine.config.transfer_source import saved_model_path

OWN_MODEL = "own"  # the Model choice "your own" (its file: the model_file field)
LOCAL_ADDRESSES = ("localhost", "127.0.0.1", "::1")
SAVED_RUNS_SCANNED = 2000  # newest completed runs looked at for a saved model

log = logging.getLogger("speedlab.dashboard")


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
    with Store() as store:
        out = {}
        # Those of the newest SAVED_RUNS_SCANNED completed runs that saved their model: the
        # worker records summary.model_path, and a run with save_model keeps it in its folder
        # (saved_model_path checks the file). SQL picks them from an indexed window, so the
        # picker parses only runs with a model, however many runs are stored.
        newest = (f"id IN (SELECT id FROM runs WHERE status='completed' AND trashed IS NULL ORDER BY id DESC "
                  f"LIMIT {SAVED_RUNS_SCANNED})")
        saved = ("(CASE WHEN json_valid(summary) THEN json_extract(summary, '$.model_path') END IS NOT NULL "
                 "OR CASE WHEN json_valid(config) THEN json_extract(config, '$.save_model') END)")
        for r in store.query_runs(f"{newest} AND {saved}"):
            if saved_model_path(store, r) is None:
                continue
            c = r["config"]
            data = c.get("dataset", "?") + (" labels " + ",".join(map(str, c["label_subset"]))
                                            if c.get("label_subset") else "")
            acc = (r.get("summary") or {}).get("final_val_accuracy")
            out[r["id"]] = (f"#{r['id']} · {data} · {chart_style.model_name(c.get('model'))}"
                            + (f" · val acc {acc:.3f}" if acc is not None else ""))
        return out


def follow_source_run(saved: dict) -> None:
    """init_from callback: the new run takes the source run's model (and image
    size), which transfer requires; the engine checks the rest."""
    rid = st.session_state.get("init_from")
    if rid is None:
        return
    with Store() as store:
        run = store.get_run(rid)
    if not run:
        return
    src = run["config"]
    if src.get("model") in MODELS:
        st.session_state["model"] = src["model"]
    if src.get("model") in BACKBONES:
        st.session_state["image_size"] = src.get("image_size") or 0
        st.session_state["pretrained"] = False  # init_from and ImageNet weights exclude each other


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
                          help="Letters, digits, '_', '-', '.'; it is kept as user:NAME-<the file's hash>, so "
                               "another file of the same name never replaces it")
    have = userdata.registered()
    if have:
        exp.caption("Registered: " + ", ".join(f"`user:{h}`" for h in have))
    if not exp.button("Check and register", key="upload_register", icon=":material/playlist_add_check:",
                      disabled=file is None, width="stretch"):
        return
    name = (name or "").strip() or suggested_name(file.name)
    try:
        with exp, st.spinner(f"Checking {plain.md(file.name)} ..."):
            info = userdata.register_upload(name, file.name, file.getvalue())
    except userdata.DataError as e:
        exp.caption(f":material/block: **{plain.md(file.name)} was not registered** ({len(e.problems)} problem"
                    f"{'s' if len(e.problems) > 1 else ''}); nothing was kept:")
        for line in e.problems:  # they name the file's members (class folders): untrusted text
            exp.error(plain.md(line))
        return
    except Exception as e:  # noqa: BLE001 - e.g. a full disk: one line, not a traceback
        log.exception("registering an upload failed")
        exp.error(f"{plain.md(file.name)} was not registered: {type(e).__name__}: "
                  f"{plain.md((str(e).splitlines() or [''])[0][:300])}")
        return
    shape = "x".join(str(v) for v in info.shape)
    name = info.name  # named by its content (engine.data.userdata.upload_name)
    st.session_state["upload_flash"] = (f"Registered **user:{name}**: {info.samples:,} images of {shape}, "
                                        f"{info.classes} classes" + (f", {info.test_samples:,} test images"
                                                                     if info.test_samples else "")
                                        + ". Selected above.")
    st.session_state["_select_dataset"] = f"user:{name}"
    st.session_state["_upload_n"] = n + 1
    st.rerun()


def uploads_allowed() -> bool:
    """A .keras upload is offered only where the server listens on this machine alone
    (server.address localhost) or the shared-secret gate is on (views/gate.py): a model file
    is untrusted code and weights (docs/reliability.md). Python files are never uploaded."""
    import os

    # views/gate.py's variable, read here (a page may not import another page's module); the
    # gate opens no page when it is set, so set means on.
    return st.get_option("server.address") in LOCAL_ADDRESSES or bool(os.environ.get("SPEEDLAB_SECRET"))


def model_upload_controls(sb) -> None:
    """'Upload a .keras model' (where `uploads_allowed`): the size is checked before the file
    is read; the saved file becomes the model file above."""
    if not uploads_allowed():
        sb.caption(":material/info: Uploading a .keras model is offered when the server runs on localhost "
                   "or behind the secret gate (docs/reliability.md); type a path on the server instead.")
        return
    n = st.session_state.get("_model_upload_n", 0)
    exp = sb.expander("Upload a .keras model", icon=":material/upload_file:")
    file = exp.file_uploader("A model saved with model.save('model.keras')", type=["keras"],
                             key=f"model_upload_{n}")
    if file is None:
        return
    if file.size > MAX_MODEL_KERAS_BYTES:
        exp.error(f"{plain.md(file.name)} is {file.size:,} bytes, over the {MAX_MODEL_KERAS_BYTES:,} byte limit")
        return
    try:  # named by its content: another model.keras upload never replaces this one
        path = inputs.keep_upload(file.name, file.getvalue())
    except ConfigError as e:
        exp.error(plain.md(str(e)))
        return
    except OSError as e:  # e.g. a full disk: one line
        exp.error(f"{plain.md(file.name)} was not kept: {type(e).__name__}: {plain.md(str(e)[:300])}")
        return
    st.session_state["_select_model_file"] = str(path)
    st.session_state["_model_upload_n"] = n + 1
    st.rerun()
