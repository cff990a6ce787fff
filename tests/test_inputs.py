"""An upload never replaces another (issue 56, item 3): an uploaded model file is kept
under a name derived from its content, and a stored baseline is reused only for the very
content it trained on (engine.config.inputs, engine.jobs.runner.find_baseline)."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from engine.base.errors import ConfigError
from engine.config import RunConfig, baseline_config, inputs
from engine.hardware import fingerprint
from engine.jobs import runner
from tests.helpers.pages import fake_run

A = b"PK\x03\x04 model A: a Dense(10)"  # two different files, both called model.keras
B = b"PK\x03\x04 model B: a Conv2D(32)"


def test_two_uploads_of_one_name_are_both_kept_by_content(store_home):
    a = inputs.keep_upload("model.keras", A)
    b = inputs.keep_upload("model.keras", B)
    assert a != b and a.read_bytes() == A and b.read_bytes() == B  # the first is still there
    assert a.name == f"model-{hashlib.sha256(A).hexdigest()[:16]}.keras"
    assert a.parent == b.parent == store_home / "models" / "uploads"
    assert inputs.keep_upload("model.keras", A) == a  # the same file again: one file
    assert sorted(p.name for p in a.parent.iterdir()) == sorted([a.name, b.name])  # no temporary left
    assert inputs.keep_upload("../../My model!.keras", B).name == f"My_model-{hashlib.sha256(B).hexdigest()[:16]}.keras"
    with pytest.raises(ConfigError) as e:
        inputs.keep_upload("build.py", b"import os")
    assert str(e.value) == ("upload: 'build.py' is not a .keras file; upload a model saved with "
                            "model.save('x.keras')")


def test_the_identity_of_a_config_is_its_files_content(store_home, tmp_path):
    a = inputs.keep_upload("model.keras", A)
    assert inputs.of(RunConfig(model=str(a))) == {"model_sha256": hashlib.sha256(A).hexdigest()}
    assert inputs.of(RunConfig(model="mlp")) == {}  # built-in: nothing to hash
    py = tmp_path / "m.py"
    py.write_text("def build(s, n): ...\n")
    assert inputs.of(RunConfig(model=f"{py}:build")) == {
        "model_sha256": hashlib.sha256(b"def build(s, n): ...\n").hexdigest()}


def _stored_baseline(store, cfg: RunConfig) -> int:
    """A completed baseline of `cfg` measured here, as the worker records it (plan 'inputs')."""
    base = baseline_config(cfg)
    rid = fake_run(store, base, "baseline")
    run = store.get_run(rid)
    store.update_run(rid, environment={**run["environment"], "fingerprint": fingerprint.short()},
                     plan={**run["plan"], "inputs": inputs.of(base)})
    return rid


def test_a_stored_baseline_of_one_upload_is_not_reused_for_another(store):
    a = inputs.keep_upload("model.keras", A)
    b = inputs.keep_upload("model.keras", B)
    cfg_a = RunConfig(model=str(a), precision="mixed_bfloat16", epochs=2)
    cfg_b = cfg_a.replace(model=str(b))
    mine = _stored_baseline(store, cfg_a)
    assert runner.find_baseline(store, cfg_a)["id"] == mine
    assert runner.find_baseline(store, cfg_b) is None  # another model, though both were model.keras


def test_a_typed_path_whose_file_changed_is_not_the_stored_baseline(store, tmp_path):
    path = tmp_path / "model.keras"
    path.write_bytes(A)
    cfg = RunConfig(model=str(path), precision="mixed_bfloat16", epochs=2)
    mine = _stored_baseline(store, cfg)
    assert runner.find_baseline(store, cfg)["id"] == mine
    path.write_bytes(B)  # edited or saved again under the same name
    assert runner.find_baseline(store, cfg) is None
    path.write_bytes(A)
    assert runner.find_baseline(store, cfg)["id"] == mine
    old = fake_run(store, baseline_config(cfg), "baseline")  # stored before runs recorded their inputs
    assert runner.find_baseline(store, cfg)["id"] == mine != old


def test_a_registered_data_set_is_known_by_its_arrays(store_home, tmp_path):
    from engine.data import userdata

    x = np.zeros((40, 8, 8), np.uint8)
    y = np.arange(40) % 2
    f = tmp_path / "d.npz"
    np.savez(f, x_train=x, y_train=y)
    userdata.register("mine", f)
    first = inputs.of(RunConfig(dataset="user:mine", model="mlp", batch_size=8))["data_sha256"]
    assert first == userdata.arrays_sha256(userdata.load_registered("mine")) and len(first) == 64
    np.savez(f, x_train=x + 1, y_train=y)
    userdata.register("mine", f, overwrite=True)  # replaced on purpose: another data set
    assert inputs.of(RunConfig(dataset="user:mine", model="mlp", batch_size=8))["data_sha256"] != first


def test_two_data_uploads_of_one_name_are_both_kept_and_a_run_names_its_file(store, tmp_path):
    """The Train page's data upload (engine.data.userdata.register_upload): two different
    stripes.npz under one typed name stay two data sets, each named by its file's sha256; a
    run's config names the one it trained on, whose meta.json keeps that file's hash; a stored
    baseline of one is never the other's."""
    import io

    from engine.data import userdata

    def npz(x) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, x_train=x, y_train=np.arange(40) % 2)
        return buf.getvalue()

    a, b = npz(np.zeros((40, 8, 8), np.uint8)), npz(np.full((40, 8, 8), 7, np.uint8))
    info_a = userdata.register_upload("stripes", "stripes.npz", a)
    info_b = userdata.register_upload("stripes", "stripes.npz", b)
    sha_a, sha_b = hashlib.sha256(a).hexdigest(), hashlib.sha256(b).hexdigest()
    assert (info_a.name, info_b.name) == (f"stripes-{sha_a[:12]}", f"stripes-{sha_b[:12]}")
    assert userdata.registered() == sorted([info_a.name, info_b.name])  # the first is still there
    assert userdata.register_upload("stripes", "copy.npz", a).name == info_a.name  # the same file: one
    assert userdata.registered() == sorted([info_a.name, info_b.name])
    assert userdata.registered_meta(info_a.name)["file_sha256"] == sha_a
    assert userdata.load_registered(info_b.name)["x_train"].max() == 7  # b's arrays, not a's
    assert userdata.upload_name("x" * 64, a) == "x" * 51 + "-" + sha_a[:12]  # 64 characters at most
    cfg_a = RunConfig(dataset=f"user:{info_a.name}", model="mlp", batch_size=8)
    cfg_b = cfg_a.replace(dataset=f"user:{info_b.name}")
    assert inputs.of(cfg_a) != inputs.of(cfg_b)
    mine = _stored_baseline(store, cfg_a)
    assert runner.find_baseline(store, cfg_a)["id"] == mine
    assert runner.find_baseline(store, cfg_b) is None


@pytest.mark.worker
def test_a_run_records_the_data_it_trained_on_and_a_replaced_data_set_is_not_its_baseline(store, tmp_path):
    from engine.data import userdata

    x = (np.arange(48 * 8 * 8) % 251).astype(np.uint8).reshape(48, 8, 8)
    f = tmp_path / "d.npz"
    np.savez(f, x_train=x, y_train=np.arange(48) % 2)
    userdata.register("tiny", f)
    cfg = RunConfig(dataset="user:tiny", model="mlp", epochs=1, batch_size=8)  # its own baseline
    (rid,) = runner.submit([cfg], ["baseline"], store.path)
    run = runner.wait(rid, store.path, poll_s=0.25, timeout_s=240)
    assert run["status"] == "completed", run["error"]
    sha = userdata.registered_meta("tiny")["sha256"]
    assert run["plan"]["inputs"] == {"data_sha256": sha}  # recorded by the worker
    assert runner.find_baseline(store, cfg)["id"] == rid
    np.savez(f, x_train=255 - x, y_train=np.arange(48) % 2)
    userdata.register("tiny", f, overwrite=True)  # the same name, other images
    assert runner.find_baseline(store, cfg) is None
