"""SpeedLabCallback stores the training-set size (the plan's n_train, from the data fit sees or
`num_samples=`) and the held-out test accuracy of `test_data=` (issue 55), so that a comparison
of two scripts gets its split into throughput and sample efficiency, and its test accuracy.

Digits: the first 1,500 samples train with validation_split=0.2, so Keras trains on
floor(1500 * 0.8) = 1,200 samples; the last 297 are the held-out test set."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.tf


def _data():
    import keras
    import numpy as np
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = (d.images.astype(np.float32) / 16.0)[..., None], keras.utils.to_categorical(d.target, 10)
    return (x[:1500], y[:1500]), (x[1500:], y[1500:])


def _model():
    import keras

    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(10, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(1e-2), loss="categorical_crossentropy", metrics=["acc"])
    return m


def _stored(run_id):
    from engine.store import Store

    with Store() as store:
        return store.get_run(run_id), store.metrics("epochs", run_id)


def test_arrays_store_the_split_and_the_test_accuracy_the_script_measures(store_home):
    from engine.report.target import samples_to_accuracy
    from engine.training.script_run import SpeedLabCallback

    (x, y), test = _data()
    model = _model()
    cb = SpeedLabCallback(name="split", target_accuracy=0.8, test_data=test)
    model.fit(x, y, batch_size=64, epochs=3, validation_split=0.2, verbose=0, callbacks=[cb])
    own = model.evaluate(*test, verbose=0, return_dict=True)["acc"]  # the script's own figure
    run, epochs = _stored(cb.run_id)
    assert run["plan"]["n_train"] == 1200 and run["plan"]["n_train_note"] is None
    assert run["summary"]["test_accuracy"] == pytest.approx(own, abs=1e-6)
    assert run["summary"]["test_note"] is None and run["summary"]["test_samples"] == len(test[0])
    hit = next(e["epoch"] for e in epochs if e["val_accuracy"] >= 0.8 - 1e-6)
    assert samples_to_accuracy(run, epochs, 0.8) == (hit + 1) * 1200


def test_a_generator_without_length_counts_its_epoch_and_num_samples_overrides(store_home):
    import numpy as np

    from engine.training.script_run import SpeedLabCallback

    (x, y), _ = _data()
    x, y = x[:1200], y[:1200]

    def batches():  # 18 batches of 64 and a short one of 48 each epoch, no length
        while True:
            for i in range(0, 1200, 64):
                yield x[i:i + 64], y[i:i + 64]

    cb = SpeedLabCallback(name="gen")
    _model().fit(batches(), steps_per_epoch=19, epochs=2, verbose=0, callbacks=[cb])
    run, _ = _stored(cb.run_id)
    assert run["plan"]["n_train"] == 1200
    assert run["summary"]["test_accuracy"] is None
    assert run["summary"]["test_note"] == ("not measured: give SpeedLabCallback(test_data=(x_test, y_test)) "
                                           "held-out data")
    cb = SpeedLabCallback(name="told", num_samples=60_000)  # what the user says wins
    _model().fit(x, y, batch_size=64, epochs=1, verbose=0, callbacks=[cb])
    assert _stored(cb.run_id)[0]["plan"]["n_train"] == 60_000
    with pytest.raises(ValueError, match=r"num_samples: 0 is not a sample count; give the training set's size"):
        SpeedLabCallback(num_samples=0)
    assert np.isfinite(run["summary"]["samples_per_sec"])


def test_two_fits_on_different_data_say_the_size_is_not_known(store_home):
    from engine.training.script_run import SpeedLabCallback

    (x, y), test = _data()
    model, cb = _model(), SpeedLabCallback(name="two", test_data=(test[0], test[1]))
    model.fit(x[:600], y[:600], batch_size=64, epochs=1, verbose=0, callbacks=[cb])
    model.fit(x, y, batch_size=64, epochs=1, verbose=0, callbacks=[cb])
    run, _ = _stored(cb.run_id)
    assert run["plan"]["n_train"] is None
    assert run["plan"]["n_train_note"] == ("not known: the fits trained on 600, 1500 samples an epoch; give "
                                           "SpeedLabCallback(num_samples=...)")
    assert run["summary"]["test_accuracy"] == pytest.approx(
        model.evaluate(*test, verbose=0, return_dict=True)["acc"], abs=1e-6)
