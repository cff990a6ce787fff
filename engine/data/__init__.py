"""Data: what each data set is (meta, info, keras_data, userdata: no TF), how it is
loaded (datasets) and fed (pipeline: tf.data, with the training targets in targets).

May import: engine.errors, engine.store (for $SPEEDLAB_HOME). Never config, training, jobs, report or cli.
"""
