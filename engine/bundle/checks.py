"""Checks that treat a run bundle as untrusted input, before anything is read or written.

Three layers, each raising `BundleRejected` (one line: the member and the problem):

1. `check_headers(zipfile)`: from the zip's central directory only, before any member
   is decompressed: member count, each member's and the total uncompressed size, and
   the compression ratio (a zip bomb is refused without inflating a byte).
2. `read_member` / `loads`: a member is read with a hard cap (a header that lies about
   its size cannot make it read more) and its JSON is parsed only after a scan shows
   it nests at most MAX_DEPTH levels (no RecursionError, no deep-structure blow-up).
3. `check_payload(member, payload, columns)`: a run file's schema: required fields and
   their types, the same config validation as a new run (engine.config.RunConfig), and
   metric tables whose rows fit the store's columns (NOT NULL columns present, scalar
   values, one value per column).

The limits sit far above real bundles (a digits run is about 30 KB; a 100,000-step run
with one execution per step about 15 MB): they only stop hostile or broken files.
"""
from __future__ import annotations

import json
import re
import zipfile
from typing import Any

MAX_MEMBERS = 10_000             # manifest + one file per run
MAX_MEMBER_BYTES = 64 * 2**20    # uncompressed size of one member (bytes)
MAX_TOTAL_BYTES = 256 * 2**20    # uncompressed size of all members (bytes)
MAX_RATIO = 100                  # uncompressed / compressed, for members over RATIO_FROM bytes
RATIO_FROM = 2**20               # small members may compress far better (a repeated header)
MAX_DEPTH = 32                   # JSON nesting (a run file needs 5)

RUN_STATUSES = ("completed", "failed", "cancelled")
RUN_ROLES = ("run", "baseline", "worker")
# Run fields: name -> (allowed types, required). bool is excluded from numbers below.
_NUM = (int, float)
RUN_FIELDS: dict[str, tuple[tuple, bool]] = {
    "id": ((int,), True), "created": (_NUM, True), "role": ((str,), True), "config": ((dict,), True),
    "status": ((str,), True), "key": ((str,), True),
    "group_id": ((str, type(None)), False), "environment": ((dict, type(None)), False),
    "started": ((*_NUM, type(None)), False), "ended": ((*_NUM, type(None)), False),
    "plan": ((dict, type(None)), False), "summary": ((dict, type(None)), False),
    "error": ((str, type(None)), False), "stderr_tail": ((str, type(None)), False),
    "baseline_id": ((int, type(None)), False), "origin": ((dict, type(None)), False),
}
# Fields of a config that depend on the data set being present on this machine: a run
# imported from a machine with data this one lacks is checked for everything else.
_DATA_FIELDS = ("dataset", "batch_size", "steps_per_execution", "validation_fraction", "label_subset",
                "target_accuracy", "stop_at_target")


class BundleRejected(ValueError):
    """A bundle refused by a check; `str(err)` is '<member>: <problem>'."""


def check_headers(z: zipfile.ZipFile) -> None:
    """Refuse a zip whose central directory announces too many members, too large a
    member or total, or a ratio only a zip bomb has. Reads no member.
    Raises: BundleRejected naming the member (or 'the archive')."""
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise BundleRejected(f"the archive: {len(infos):,} members, more than the {MAX_MEMBERS:,} a bundle may hold")
    total = 0
    for info in infos:
        if info.file_size > MAX_MEMBER_BYTES:
            raise BundleRejected(f"{info.filename}: {_mb(info.file_size)} uncompressed, more than the "
                                 f"{_mb(MAX_MEMBER_BYTES)} a member may hold")
        if info.file_size > RATIO_FROM and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise BundleRejected(f"{info.filename}: compressed {info.file_size / max(info.compress_size, 1):,.0f}:1 "
                                 f"({_mb(info.compress_size)} -> {_mb(info.file_size)}), more than the "
                                 f"{MAX_RATIO}:1 of any real bundle (a zip bomb?)")
        total += info.file_size
        if total > MAX_TOTAL_BYTES:
            raise BundleRejected(f"the archive: over {_mb(MAX_TOTAL_BYTES)} uncompressed in all, more than "
                                 "a bundle may hold")


def read_member(z: zipfile.ZipFile, member: str) -> bytes:
    """A member's bytes, never more than its header announced (and never more than
    MAX_MEMBER_BYTES): a header that understates the size is refused.
    Raises: KeyError (no such member), BundleRejected, zipfile errors."""
    info = z.getinfo(member)
    cap = min(info.file_size, MAX_MEMBER_BYTES)
    with z.open(info) as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise BundleRejected(f"{member}: holds more than its header's {info.file_size:,} bytes")
    return data


_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def depth(data: bytes) -> int:
    """Deepest nesting of arrays and objects in JSON text `data` (strings skipped)."""
    level = deepest = 0
    for m in _TOKENS.finditer(data):
        c = m.group()[:1]
        if c in (b"[", b"{"):
            level += 1
            if level > deepest:
                deepest = level
                if deepest > MAX_DEPTH:
                    return deepest
        elif c in (b"]", b"}"):
            level -= 1
    return deepest


def loads(member: str, data: bytes) -> Any:
    """JSON of a member, parsed only when it nests at most MAX_DEPTH levels.
    Raises: BundleRejected (too deep, not UTF-8, not JSON, non-finite numbers)."""
    if depth(data) > MAX_DEPTH:
        raise BundleRejected(f"{member}: JSON nested more than {MAX_DEPTH} levels deep (a run file needs 5)")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise BundleRejected(f"{member}: not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise BundleRejected(f"{member}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None


def check_manifest(manifest: Any) -> None:
    """The manifest's runs (a list of run ids) and checksums (member -> hex digest)."""
    runs, sums = manifest.get("runs"), manifest.get("sha256")
    if not isinstance(runs, list) or not runs or not all(_is_int(r) for r in runs):
        raise BundleRejected("manifest.json: 'runs' is not a non-empty list of run ids")
    if len(set(runs)) != len(runs):
        raise BundleRejected("manifest.json: 'runs' lists a run id twice")
    if not isinstance(sums, dict) or not all(isinstance(v, str) for v in sums.values()):
        raise BundleRejected("manifest.json: 'sha256' is not a table of member checksums")


def check_payload(member: str, payload: Any, columns: dict[str, dict[str, bool]]) -> None:
    """Validate one run file before anything is written.

    `columns`: {table: {column: not_null}} of this store (runs and the metric tables).
    Raises: BundleRejected '<member>: <field>: <problem>'."""
    if not isinstance(payload, dict):
        raise BundleRejected(f"{member}: is a JSON {_kind(payload)}, not a run object")
    run = payload.get("run")
    if not isinstance(run, dict):
        raise BundleRejected(f"{member}: run: missing or not an object")
    for name, (types, required) in RUN_FIELDS.items():
        if name not in run:
            if required:
                raise BundleRejected(f"{member}: run.{name}: missing (a run file has id, created, role, "
                                     "status, key and config)")
            continue
        v = run[name]
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            raise BundleRejected(f"{member}: run.{name}: is a JSON {_kind(v)}, not "
                                 + " or ".join(_TYPE_NAMES[t] for t in types))
    if run["status"] not in RUN_STATUSES:
        raise BundleRejected(f"{member}: run.status: {run['status']!r} is not one of {', '.join(RUN_STATUSES)}")
    if run["role"] not in RUN_ROLES:
        raise BundleRejected(f"{member}: run.role: {run['role']!r} is not one of {', '.join(RUN_ROLES)}")
    from engine.store.rows import REQUIRED_CONFIG

    for key, types in REQUIRED_CONFIG.items():  # defaults would fill these in: a bundle must have them
        if key not in run["config"]:
            raise BundleRejected(f"{member}: run.config.{key}: missing (every exported config has it)")
    problem = config_problem(run["config"])
    if problem:
        raise BundleRejected(f"{member}: run.config.{problem}")
    for table, cols in columns.items():
        if table == "runs" or table not in payload:
            continue
        _check_table(member, table, payload[table], cols)


def config_problem(config: dict) -> str | None:
    """None when `config` passes RunConfig's validation (a new run's), else the
    ConfigError's line. A config whose data set is not on this machine is
    validated for everything that does not depend on the data."""
    from engine.config import RunConfig
    from engine.base.errors import ConfigError

    try:
        RunConfig.from_dict(config)
        return None
    except ConfigError as e:
        if e.field != "dataset":
            return str(e)
    except TypeError as e:  # e.g. a field of the wrong kind that the dataclass chokes on
        return f"{e}"
    try:  # the data set is not here: check the rest against a stand-in
        RunConfig.from_dict({**config, "dataset": "synthetic", "synthetic_samples": 100_000,
                              "synthetic_shape": [8, 8, 1], "synthetic_classes": 10})
    except ConfigError as e:
        if e.field not in _DATA_FIELDS:
            return str(e)
    except TypeError as e:
        return f"{e}"
    if not isinstance(config.get("dataset"), str) or not config["dataset"]:
        return f"dataset: {config.get('dataset')!r} is not a data set name"
    return None


def _check_table(member: str, table: str, t: Any, have: dict[str, bool]) -> None:
    where = f"{member}: {table}"
    if not isinstance(t, dict) or not isinstance(t.get("columns"), list) or not isinstance(t.get("rows"), list):
        raise BundleRejected(f"{where}: not an object of 'columns' and 'rows' lists")
    cols = t["columns"]
    if not all(isinstance(c, str) for c in cols) or len(set(cols)) != len(cols):
        raise BundleRejected(f"{where}.columns: not a list of distinct column names")
    if not t["rows"]:
        return
    missing = [c for c, not_null in have.items() if not_null and c != "run_id" and c not in cols]
    if missing:
        raise BundleRejected(f"{where}.columns: lacks {', '.join(missing)} (required by the store)")
    required = [i for i, c in enumerate(cols) if have.get(c)]
    for n, row in enumerate(t["rows"]):
        if not isinstance(row, list) or len(row) != len(cols):
            raise BundleRejected(f"{where}.rows[{n}]: not a list of {len(cols)} values (one per column)")
        for i, v in enumerate(row):
            if v is not None and not isinstance(v, (int, float, str)):
                raise BundleRejected(f"{where}.rows[{n}].{cols[i]}: is a JSON {_kind(v)}, not a number")
        for i in required:
            if row[i] is None:
                raise BundleRejected(f"{where}.rows[{n}].{cols[i]}: is null, but the store requires a value")


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", dict: "an object",
               list: "an array", type(None): "null"}


def _kind(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number",
            float: "number", type(None): "null"}.get(type(v), type(v).__name__)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f} MB"
