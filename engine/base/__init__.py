"""The engine's base: what every layer may use and which uses nothing of the engine.

`errors` (ConfigError, the one-line error), `process` (worker processes and their
identity), `jsonsafe` (strict JSON: no NaN or Infinity), `cluster` (a multi-worker
cluster spec), `plain` (untrusted text shown as plain text).
"""
