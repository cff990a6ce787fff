"""Data: what each data set is (meta, info, keras_data, userdata: no TF), how it is
loaded (datasets) and fed (pipeline: tf.data, with the training targets in targets).

Layer: see docs/architecture.md, the one list of layer rules (tests/test_imports.py enforces it).
"""
