"""Train page links: settings the controls did not take are named, with what
replaced them, and Launch waits until the user accepts; the upload box states
its limits."""
import pytest
from engine.base import plain
from views.components import url_params
from tests.helpers.apptest import app_test


@pytest.mark.unit
def test_rejected_compares_meanings_not_spellings():
    raw = {"batch_size": "abc", "learning_rate": "1e-3", "epochs": "3.0", "jit_compile": "True",
           "precision": "float8", "dataset": "user:faces", "utm_source": "mail"}
    values = {"batch_size": 128, "learning_rate": 0.001, "epochs": 3, "jit_compile": True,
              "precision": "float32", "dataset": "digits"}
    assert url_params.rejected(raw, values) == [("batch_size", "abc", 128), ("precision", "float8", "float32"),
                                                ("dataset", "user:faces", "digits")]
    assert url_params.notice("batch_size", "abc", 128, "not a number") == \
        "batch_size: 'abc' from the link was not accepted (not a number); using 128 instead"


@pytest.mark.page
def test_a_link_with_bad_settings_names_each_and_blocks_launch_until_accepted(store_home):
    at = app_test()
    at.query_params.update({"batch_size": "abc", "precision": "float8", "learning_rate": "0.01"})
    at.run()
    assert not at.exception
    (box,) = [w for w in at.warning if "Settings from the link were changed" in w.value]
    lines = [ln[2:] for ln in box.value.splitlines() if ln.startswith("- ")]
    assert lines == [
        "batch_size: 'abc' from the link was not accepted (not a number); using 128 instead",
        "precision: 'float8' from the link was not accepted (not one of the choices); using 'float32' instead"]
    assert at.number_input(key="learning_rate").value == 0.01  # a good setting is taken as it is
    assert at.button(key="launch").disabled
    at.run()  # still pending on the next rerun (the URL no longer shows the bad values)
    assert at.button(key="launch").disabled
    at.button(key="url_accept").click().run()
    assert not [w for w in at.warning if "Settings from the link" in w.value]
    assert not at.button(key="launch").disabled


@pytest.mark.page
def test_a_link_setting_whose_control_is_hidden_is_named_not_dropped(store_home):
    at = app_test()
    # reduce_on_plateau has no control with a cyclic schedule: its value used to vanish unsaid.
    at.query_params.update({"schedule": "cyclic", "reduce_on_plateau": "true", "utm_source": "mail"})
    at.run()
    assert not at.exception
    (box,) = [w for w in at.warning if "Settings from the link were changed" in w.value]
    lines = [ln[2:] for ln in box.value.splitlines() if ln.startswith("- ")]
    assert lines == ["reduce_on_plateau: 'true' from the link was not used (no control takes it with these "
                     "settings); the run uses the default"]  # utm_source is not a run setting: no notice
    assert at.button(key="launch").disabled
    at.button(key="url_accept").click().run()
    assert not at.button(key="launch").disabled
    # A hidden setting at its default loses nothing: no notice, Launch free (the Autopilot's
    # "Use this configuration" passes reference_batch_size 128 without scale_lr).
    at = app_test()
    at.query_params.update({"schedule": "cyclic", "reduce_on_plateau": "false", "reference_batch_size": "128"})
    at.run()
    assert not at.exception and not [w for w in at.warning if "Settings from the link" in w.value]
    assert not at.button(key="launch").disabled


@pytest.mark.page
def test_a_link_value_the_boxes_take_stays_on_screen_with_the_engines_message(store_home):
    # The Data set box takes typed names and paths, and the number boxes leave ranges to the
    # engine (issue 12): such a value from a link is kept, and the engine's one line names it.
    for params, msg in (
            ({"dataset": "user:faces"}, "dataset: 'user:faces' is not a registered data set; register it first "
                                        "(python -m engine data add NAME PATH); registered: none yet"),
            ({"epochs": "-5"}, "epochs: -5 is out of range; use a value between 1 and 10000")):
        at = app_test()
        at.query_params.update(params)
        at.run()
        assert not at.exception and not [w for w in at.warning if "Settings from the link" in w.value]
        shown = plain.md(msg)  # engine lines carry typed text: shown as plain text
        assert shown in [e.value for e in at.error] and f"Launch is disabled: {shown}" in [e.value for e in at.error]
        assert at.button(key="launch").disabled


@pytest.mark.page
def test_a_good_link_launches_at_once_and_the_upload_box_states_its_limits(store_home):
    at = app_test()
    at.query_params.update({"batch_size": "64", "precision": "mixed_bfloat16"})
    at.run()
    assert not [w for w in at.warning if "Settings from the link" in w.value]
    assert at.number_input(key="batch_size").value == 64 and not at.button(key="launch").disabled
    limits = [c.value for c in at.caption if "Uploads up to" in c.value]
    assert limits == [":material/info: Uploads up to 200 MB. Images 2 to 4096 pixels a side, at most 2.00 GiB "
                      "decoded (SPEEDLAB_MAX_DECODED_MB). Bigger sets: `python -m engine data add NAME PATH` or "
                      "`--dataset PATH` on the command line."]
