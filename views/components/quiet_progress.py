"""The progress lines of a measuring comparison as one HTML block whose bars and
clocks move on in the browser, once a second, between reads of the store: a small
script plays frames computed by engine.report.progress_motion (which says why).
"""
from __future__ import annotations

import html
import itertools
import json
import re

from engine.report.progress_motion import frames

BAR, TRACK, ORANGE = "#0072B2", "#E5E7EB", "#D55E00"  # the theme's primary colour; Okabe-Ito orange
_serial = itertools.count()  # element ids: a block's script finds its own lines

# Plays each line's frames (data-frames: [[fraction, elapsed s, left s or null, epoch, step], ...]) one a
# second by the clock, not by counting ticks (a browser short of CPU runs its timers late: counted,
# 1 s showed in 3.2 s), and stops when a rerun has replaced the block. Numbers only come in, as
# JSON. No "<" before a letter or digit: DOMPurify drops a script whose text looks like it holds a tag.
# A clock with a data-key never steps back by up to 2 s across reruns (window.slqSeen keeps what
# it showed): each read anchors it to the run's start again, and the browser's count of the
# block before may have run a second ahead (rounding, a slow rerun). A larger step is a reset.
_PLAYER = """<script>(function(){const root=document.getElementById("%s");if(!root)return;
const left=(l,m)=>l===null?"warming up":(1>l?"< 1 s left":(m?"at most ":"")+l+" s left");let t=0;
const t0=performance.now();
const seen=window.slqSeen||(window.slqSeen={});
const show=(el,k,v)=>{if(k&&seen[k]>v&&seen[k]-v<=2)v=seen[k];if(k)seen[k]=v;el.textContent=v;};
const tick=function(){
root.querySelectorAll("[data-frames]").forEach(function(el){const fs=JSON.parse(el.dataset.frames);
const f=fs[Math.min(t,fs.length-1)];el.querySelector(".slq-bar").style.width=(100*f[0]).toFixed(1)+"%%";
show(el.querySelector(".slq-e"),el.dataset.key&&"e"+el.dataset.key,f[1]);
el.querySelector(".slq-l").textContent=left(f[2],el.dataset.most);
el.querySelector(".slq-ep").textContent=f[3];el.querySelector(".slq-s").textContent=f[4];});
root.querySelectorAll("[data-clock]").forEach(function(el){
show(el,el.dataset.key&&"c"+el.dataset.key,Number(el.dataset.clock)+Math.min(t,Number(el.dataset.h)));});};
tick();const id=setInterval(function(){if(!root.isConnected){clearInterval(id);return;}t=Math.floor((performance.now()-t0)/1000);tick();},1000);})();
</script>"""


def md_line(line: str) -> str:
    """One status line (views.components.live_charts.status_line markdown: **bold**,
    :orange[...], :material/icon:) as escaped HTML."""
    s = html.escape(re.sub(r":material/\w+:\s*", "", line), quote=False)
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    return re.sub(r":orange\[(.+?)\]", rf'<span style="color:{ORANGE}">\1</span>', s)


def left_text(left: int | None, at_most: bool = False) -> str:
    """'n s left', '< 1 s left' or 'warming up' (no steady rate yet), as status_line prints it;
    `at_most`: 'at most n s left', for a run that stops at its target (its estimate is for every
    epoch: "702 s left" read just before one ended)."""
    if left is None:
        return "warming up"
    return "< 1 s left" if left < 1 else f"{'at most ' if at_most else ''}{left} s left"


def _bar(fraction: float, cls: str = "") -> str:
    w = 100 * min(max(fraction, 0.0), 1.0)
    return (f'<div style="height:6px;background:{TRACK};border-radius:3px;margin:4px 0 10px">'
            f'<div class="{cls}" style="height:100%;width:{w:.1f}%;background:{BAR};border-radius:3px">'
            f'</div></div>')


def running_line(label: str, p: dict, horizon_s: int, key: str = "") -> str:
    """HTML of a running run: '<b>label</b>: epoch e/E · step s/S · n s elapsed · m s left'
    and its bar, whose bar, counts and clocks the block's script moves on for `horizon_s` s
    (`p`: engine.report.progress.progress of the run); `key` (e.g. the run's id) names its
    elapsed clock across rereads, so that it never steps back."""
    fs = frames(p, horizon_s)
    f0, e0, l0, ep0, s0 = fs[0]
    most = bool(p.get("time_left_is_most"))
    most_attr = ' data-most="1"' if most else ""
    return (f'<div data-frames="{html.escape(json.dumps(fs))}" data-key="{html.escape(key)}"'
            f'{most_attr}><div><b>{html.escape(label)}</b>: '
            f'epoch <span class="slq-ep">{ep0}</span>/{int(p["epochs"])} · '
            f'step <span class="slq-s">{s0}</span>/{int(p["total_steps"])} · '
            f'<span class="slq-e">{e0}</span> s elapsed · <span class="slq-l">{left_text(l0, most)}</span></div>'
            f'{_bar(f0, "slq-bar")}</div>')


def clock(since_s: float, horizon_s: int, key: str = "") -> str:
    """A seconds count that the block's script moves on once a second, for at most
    `horizon_s` s (until the next read redraws it), from `since_s` s (counted from what it
    times: a run's or a comparison's start); `key` names it across rereads (never steps back)."""
    return (f'<span data-clock="{int(since_s)}" data-h="{int(horizon_s)}" data-key="{html.escape(key)}">'
            f'{int(since_s)}</span>')


def static_line(line: str, fraction: float | None, since_s: float | None = None, horizon_s: int = 30,
                key: str = "") -> str:
    """HTML of a line whose bar does not move on (queued, setting up, ended), with its bar if
    any; with `since_s`, a '· n s' count that moves on (a worker setting up: the screen must
    not stand still while it loads TensorFlow and builds the model), named `key` as `clock`'s."""
    tail = f" · {clock(since_s, horizon_s, key)} s" if since_s is not None else ""
    return (f'<div style="margin-bottom:6px">{md_line(line)}{tail}</div>'
            + (_bar(fraction) if fraction is not None else ""))


def block(lines: list[str]) -> str:
    """The lines (running_line / static_line HTML) as one block, in the page's text size,
    with the script that moves them on (st.html(..., unsafe_allow_javascript=True))."""
    key = f"slq{next(_serial)}"
    return (f'<div id="{key}" style="font-size:0.95rem;line-height:1.6">{"".join(lines)}</div>'
            + _PLAYER % key)
