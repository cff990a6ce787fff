"""The store's health for every page: a damaged, unreadable or full store is one
line naming the file and the way out (python -m engine doctor), never a redacted
exception. app.py calls `healthy()` before any page and runs the page inside `guard()`."""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager

import streamlit as st

from engine.store import DOCTOR, Store, StoreBusyError, StoreError, StoreFullError, default_path, fault_line


def problem() -> str | None:
    """One line when the store cannot be opened and read, else None."""
    try:
        with Store() as store:
            store.conn.execute("SELECT id, status FROM runs ORDER BY id DESC LIMIT 1").fetchall()
    except StoreBusyError:
        return None  # a lock passes: each page says so where it writes
    except StoreError as e:
        return str(e)
    except sqlite3.DatabaseError as e:
        return fault_line(e, default_path())
    return None


def show(line: str, full: bool = False) -> None:
    st.error(line, icon=":material/database:" if not full else ":material/hard_drive:")
    if not full:
        st.markdown("Run this in a terminal, in the folder you start SpeedLab from, then reload the page:")
        st.code(DOCTOR, language="bash")


def healthy() -> bool:
    """True when the store reads; otherwise shows its line (and the doctor command) and returns False."""
    line = problem()
    if line is None:
        return True
    show(line, full="is full" in line)
    return False


@contextmanager
def guard():
    """A store fault raised while a page runs becomes the same line (other errors pass)."""
    try:
        yield
    except (StoreError, sqlite3.DatabaseError) as e:
        line = str(e) if isinstance(e, StoreError) else fault_line(e, default_path())
        if line is None:
            raise
        show(line, full=isinstance(e, StoreFullError) or "is full" in line)
