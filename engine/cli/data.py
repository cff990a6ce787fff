"""``python -m engine data {check,add,list,remove}``: user data sets (no TF here).

Wire it up with ``cli_data.add_parser(subparsers)``. Formats: engine.data.userdata.
"""
from __future__ import annotations

import sys

from engine.cli.printing import print_json


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("data", help="check and register your own data (.npz, folder or .zip of class folders)",
                              description="Check a user data file, or register it as data set user:NAME "
                                          "(stored converted under $SPEEDLAB_HOME/datasets/NAME).")
    sub = p.add_subparsers(dest="data_command", required=True)
    c = sub.add_parser("check", help="check PATH and list every problem (exit 2 if there is one)")
    c.add_argument("path")
    c.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    c.set_defaults(func=cmd_check)
    a = sub.add_parser("add", help="check PATH and register it as user:NAME")
    a.add_argument("name")
    a.add_argument("path")
    a.add_argument("--replace", action="store_true", help="replace a data set of that name")
    a.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    a.set_defaults(func=cmd_add)
    s = sub.add_parser("list", help="registered data sets")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.set_defaults(func=cmd_list)
    r = sub.add_parser("remove", help="delete registered data set NAME")
    r.add_argument("name")
    r.set_defaults(func=cmd_remove)


def _describe(info) -> str:
    test = f", {info.test_samples:,} test images (the test set, only reported)" if info.test_samples else ""
    return (f"{info.samples:,} images of {'x'.join(map(str, info.shape))}, {info.classes} classes "
            f"({', '.join(info.class_names[:10])}{', ...' if len(info.class_names) > 10 else ''}){test}")


def cmd_check(args) -> int:
    from engine.data import userdata

    try:
        info = userdata.path_info(args.path)
    except userdata.DataError as e:
        if args.json:
            print_json({"ok": False, "problems": e.problems})
        for line in e.problems:
            print(f"error: {line}", file=sys.stderr)
        return 2
    from engine.data.meta import class_warnings

    warnings = class_warnings(info)
    if args.json:
        print_json({"ok": True, "shape": list(info.shape), "classes": info.classes,
                          "samples": info.samples, "test_samples": info.test_samples,
                          "class_names": list(info.class_names), "dtype": info_dtype(args.path),
                          "warnings": warnings})
    else:
        print(f"ok: {_describe(info)}")
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


def info_dtype(path) -> str:
    """The stored pixel type of a checked user data path: uint8 or float32."""
    from engine.data import userdata

    return str(userdata.load_path(path).arrays["x_train"].dtype)


def cmd_add(args) -> int:
    from engine.data import userdata

    try:
        info = userdata.register(args.name, args.path, overwrite=args.replace)
    except userdata.DataError as e:
        if args.json:  # as data check: every problem, not only the last line
            print_json({"ok": False, "problems": e.problems})
        for line in e.problems:
            print(f"error: {line}", file=sys.stderr)
        return 2
    if args.json:
        print_json({"ok": True, "dataset": f"user:{args.name}", "shape": list(info.shape),
                          "classes": info.classes, "samples": info.samples, "test_samples": info.test_samples})
    else:
        print(f"registered user:{args.name}: {_describe(info)}")
    return 0


def cmd_list(args) -> int:
    from engine.data import userdata

    names = userdata.registered()
    if args.json:
        print_json([{**userdata.registered_meta(n), "dataset": f"user:{n}"} for n in names])
    elif not names:
        print("no registered data sets: python -m engine data add NAME PATH")
    for n in names if not args.json else []:
        print(f"user:{n}  {_describe(userdata.info_from_meta(userdata.registered_meta(n)))}")
    return 0


def cmd_remove(args) -> int:
    from engine.data import userdata

    try:
        found = userdata.remove(args.name)
    except userdata.DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not found:
        print(f"error: name: no data set user:{args.name}; see python -m engine data list", file=sys.stderr)
        return 2
    print(f"removed user:{args.name}")
    return 0
