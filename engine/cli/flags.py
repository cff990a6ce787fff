"""The flags every command shares and how a bad one is said: the argument parser whose
errors are one line (`Parser`, `UsageError`), one flag per RunConfig field
(`add_config_args`) and the config they make (`config_from_args`)."""
from __future__ import annotations

import argparse
import functools
import json
import sys
import typing
from dataclasses import fields

from engine.config import ConfigError, RunConfig

DEFAULTS = RunConfig()


@functools.cache
def _hints() -> dict:
    """RunConfig's type hints: evaluated once, not once per flag of every subcommand (0.13 CPU-s a parser)."""
    return typing.get_type_hints(RunConfig)


def _field_type(f):
    hint = _hints()[f.name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


def _shape(text: str) -> tuple:
    try:
        return tuple(int(p) for p in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not H,W,C (e.g. 32,32,3)") from None


def _int_list(text: str) -> tuple:
    try:
        return tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of class labels (e.g. 5,6,7,8,9)") from None


class UsageError(SystemExit):
    """What `Parser.error` raises (exit code 2): `line` is its one line, without 'error: '."""

    def __init__(self, line: str):
        super().__init__(2)
        self.line = line


# argparse's type errors, and the fix each gets in the one line.
TYPE_FIXES = {"invalid int value": "use a whole number", "invalid float value": "use a number, e.g. 0.001"}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage dump), exit code 2."""

    def error(self, message):
        # argparse names the flag and the value; the fix is what to type instead.
        fix = next((f for k, f in TYPE_FIXES.items() if k in message), None)
        line = f"{message}; {fix} (see {self.prog} --help)" if fix else f"{message}; see {self.prog} --help"
        sys.stderr.write(f"error: {line}\n")
        raise UsageError(line)


# Short spellings of some flags (the field's own flag works too): --ema 0.99, --cutmix 1.0, ...
FLAG_ALIASES = {"ema_momentum": "--ema", "cutmix_factor": "--cutmix",
                "gradient_accumulation_steps": "--gradient-accumulation"}


def add_config_args(p: argparse.ArgumentParser) -> None:
    """One flag per RunConfig field (--batch-size for batch_size, ...), its help from the field
    (`metadata["help"]`, engine.config.run_config._setting); FLAG_ALIASES adds a short spelling for some."""
    g = p.add_argument_group("run settings (defaults in brackets)")
    for f in fields(RunConfig):
        flags = ["--" + f.name.replace("_", "-")] + ([FLAG_ALIASES[f.name]] if f.name in FLAG_ALIASES else [])
        default = getattr(DEFAULTS, f.name)
        helptext = f"{f.metadata['help']} [{default}]"
        t = _field_type(f)
        kw = dict(default=None, help=helptext, dest=f.name)
        if t is bool:
            g.add_argument(*flags, action=argparse.BooleanOptionalAction, **kw)
        elif t is tuple and f.name == "synthetic_shape":
            g.add_argument(*flags, type=_shape, metavar="H,W,C", **kw)
        elif t is tuple:
            g.add_argument(*flags, type=_int_list, metavar="L,L,...", **kw)
        else:
            g.add_argument(*flags, type=t, metavar=f.name.upper(), **kw)


def config_from_args(args) -> RunConfig:
    """RunConfig from --config FILE (if given) overridden by explicit flags.
    Raises ConfigError."""
    base = {}
    if getattr(args, "config", None):
        try:
            with open(args.config, encoding="utf-8") as fh:
                base = json.load(fh)
        except UnicodeDecodeError as e:
            raise ConfigError("config", args.config, f"is not UTF-8 text (byte {e.start})",
                              "give a JSON file of settings, saved as UTF-8") from None
        except OSError as e:
            raise ConfigError("config", args.config, f"cannot be read ({e.strerror})",
                              "give the path of a JSON file of settings") from None
        except json.JSONDecodeError as e:
            raise ConfigError("config", args.config, f"is not valid JSON (line {e.lineno}, column {e.colno}: "
                              f"{e.msg})", "fix the file: one JSON object of settings") from None
        if not isinstance(base, dict):
            raise ConfigError("config", args.config, "is not a JSON object", 'write {"batch_size": 256, ...}')
    for f in fields(RunConfig):
        v = getattr(args, f.name, None)
        if v is not None:
            base[f.name] = v
    return RunConfig.from_dict(base)
