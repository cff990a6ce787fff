"""The loss scale and skipped updates of a float16 run on the Train page, and
metrics_incomplete on the status line (stored rows only, no TensorFlow)."""
import pytest
import base64
import json

import numpy as np
import pandas as pd

from engine.config import RunConfig
from engine.charts import train as train_charts
from tests.helpers.apptest import app_test


def stored_float16_run(store, skips=(0, 1, 2), lost=None):
    """A completed mixed_float16 run of 6 executions whose first three skip updates."""
    cfg = RunConfig(precision="mixed_float16", epochs=1)
    rid = store.create_run(cfg.to_json(), group_id="g", status="running")
    store.update_run(rid, plan={"steps_per_epoch": 6, "total_steps": 6, "epochs": 1, "replicas": 1,
                                "device_kind": "CPU"})
    rows, applied, scale = [], 0, 2.0 ** 15
    for i in range(6):
        skipped = 1 if i in skips else 0
        applied += 1 - skipped
        scale /= 2 ** skipped
        rows.append((i, 0, i + 1, 1, 0.1 * (i + 1), 0.1, 1280.0, 2.0, 1e-3, int(i == 0), None,
                     applied, skipped, scale))
    store.add_metrics(rid, rows)
    summary = {"samples_per_sec": 1280.0, "wall_sec": 0.6, "steps": 6, "updates_applied": applied,
               "skipped_updates": len(skips), "warnings": []}
    if lost:
        summary.update(metrics_incomplete=lost, metrics_lost={"executions": lost, "epochs": 0, "system": 0})
    store.finish_run(rid, "completed", summary=summary)
    return rid


def values(v):
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


def test_loss_scale_figure():
    e = pd.DataFrame({"step": [1, 2, 3], "loss_scale": [16384.0, 16384.0, 8192.0], "skipped": [1, 0, 1],
                      "label": "#1", "color": "#0072B2"})
    fig = train_charts.loss_scale_figure(e)
    scale, skips = fig.data
    assert list(scale.y) == [16384.0, 16384.0, 8192.0] and list(skips.x) == [1, 3] and list(skips.y) == [1, 1]
    assert fig.layout.yaxis.type == "log" and fig.layout.xaxis.title.text == "batches run (steps)"
    empty = train_charts.loss_scale_figure(e.assign(loss_scale=None))
    assert empty.layout.annotations[0].text == "no float16 loss scaling in these runs"


@pytest.mark.page
def test_train_page_charts_the_loss_scale_and_says_how_many_updates_were_skipped(store):
    rid = stored_float16_run(store, lost=7)
    at = app_test().run()
    assert not at.exception
    specs = {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}
    scale = specs["loss_scale"]["data"][0]
    assert values(scale["y"]) == [16384.0, 8192.0, 4096.0, 4096.0, 4096.0, 4096.0]
    captions = "\n".join(c.value for c in at.caption)
    assert "3 of 6 updates skipped (gradients not finite under float16 loss scaling)" in captions
    status = "\n".join(m.value for m in at.markdown)
    assert ("metrics incomplete: 7 metric rows could not be stored (store locked or failing); charts and "
            "figures miss them") in status and f"#{rid} " in status
