"""Names vulture cannot see used: scripts/test.sh runs `vulture` over the product code with this
file (pyproject.toml [tool.vulture]) and fails on anything else unused. Add a name here only
when something outside our code uses it; say who. Code only a test uses is not kept.
"""
# ruff: noqa
_ = object()

# Keras calls these on a callback or a layer (keras.callbacks.Callback, keras.layers.Layer).
_.on_train_begin, _.on_train_end, _.on_epoch_begin, _.on_epoch_end
_.on_train_batch_begin, _.on_train_batch_end, _.on_test_begin, _.on_test_batch_end, _.on_test_end
_.compute_output_shape
_.stop_evaluating  # read by Keras's evaluate loop (engine.training.recorder)
_.num_batches  # keras.utils.PyDataset's protocol (engine.data.np_pipeline)
# tf.data.Options fields set for TensorFlow to read (engine.data.pipeline).
_.auto_shard_policy, _.inject_prefetch, _.map_parallelization
# sqlite3 reads a connection's row_factory.
_.row_factory
# The import system calls a meta-path finder's find_spec (engine.training.backends).
_.find_spec
# Keras's optimizer calls finalize_variable_values(var_list) (engine.training.build).
_.finalize_variable_values, var_list
# Python calls these: object construction, a class swap, module __getattr__ (speedlab/).
__new__, _.__class__, __getattr__

# Dataclass fields, read through dataclasses.asdict / to_dict (the stored run summary and the
# Keras patch records that tests/test_keras_patches.py checks against the installed Keras).
warmup_sec, steady_executions, samples_per_sec, samples_per_sec_mean, samples_per_sec_iqr, train_sec
validation_sec, other_sec, wall_sec, fit_sec, end_to_end_samples_per_sec, persistent_iterators
replicas_simulated, global_batch_size, per_replica_batch_size, dropped_samples_per_epoch, updates_applied
skipped_updates, final_loss, final_accuracy, final_val_loss, final_val_accuracy, time_to_target_sec
epochs_run, stopped_at_target, time_to_target_note, effective_learning_rate, train_accuracy_on_mixed_targets
data_wait_sec, input_batches_per_sec, instrumentation, validation_traced_ahead, forward_flops_per_sample
flops_uncounted, finetune_learning_rate, test_sec, test_split, test_note, flops_all_taps_per_sample
flops_phases, flops_source, flops_xla_per_sample, flops_note
fixes, keras_versions, upstream, internals, used_by

# Vocabularies: the values a verdict may take, named in the docstrings that return one.
VERDICTS

# The patch registry and its check, the API tests/test_keras_patches.py holds against each
# Keras release (docs/architecture.md, "Inside a run"): the pin is what keeps the patches honest.
registry, uses_cached_iterator

# RunConfig's split of the data set, in the field's terms, for callers outside the engine
# (the Runs page reads the stored figures; scripts and tests call these).
_.per_replica_batch_size, _.test_size

# A pytest hook of benchmarks/per_test_cpu.py, which pytest calls (`-p benchmarks.per_test_cpu`).
pytest_runtest_protocol
