"""Run bundles: stored runs in one .zip that travels to another machine's store.

A bundle holds, per run, its stored row (config, environment with host,
devices and versions, plan, summary, status, start and end times) and every
metric row (executions: the timeline; epochs; system samples; workers), as
JSON, plus ``manifest.json`` with the format, the store schema it was written
with and a SHA-256 per file. Importing adds the runs under new ids, keeps the
environment untouched (the original host, devices and versions are the
provenance) and marks each run imported in the store's ``origin`` column:
``{"key", "host", "run_id", "exported", "exported_from", "imported", "bundle"}``.

Every refusal is a BundleError with one line that says which problem it is
(not a zip or truncated, a file that fails its checksum, a newer schema,
already imported) and leaves the store unchanged: an import is one transaction.

"""
from engine.bundle.export import export_runs
from engine.bundle.format import BUNDLE_VERSION, FORMAT, MANIFEST, BundleError, provenance, run_key
from engine.bundle.import_ import import_bundle, read_bundle

__all__ = ["BUNDLE_VERSION", "FORMAT", "MANIFEST", "BundleError", "export_runs", "import_bundle", "provenance",
           "read_bundle", "run_key"]
