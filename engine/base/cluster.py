"""Multi-worker cluster descriptions (TF_CONFIG), validated without TensorFlow.

SpeedLab builds no cluster code of its own: several workers train with
`tf.distribute.MultiWorkerMirroredStrategy`, which reads the standard
``TF_CONFIG`` environment variable
(https://www.tensorflow.org/guide/distributed_training#setting_up_the_tf_config_environment_variable):

    {"cluster": {"worker": ["host1:12345", "host2:12345"]},
     "task": {"type": "worker", "index": 0}}

Task 0 is the chief: it writes the run's metrics to the store.
"""
from __future__ import annotations

import errno
import ipaddress
import json
import os
import re
import socket
from dataclasses import dataclass
from typing import Optional

from engine.base.errors import ConfigError

_HOST = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")


@dataclass(frozen=True)
class Cluster:
    """Worker addresses ("host:port") and this process's task index (0 = chief)."""

    workers: tuple
    task_index: int

    @property
    def is_chief(self) -> bool:
        return self.task_index == 0

    def tf_config(self) -> str:
        """The TF_CONFIG JSON for this task."""
        return json.dumps({"cluster": {"worker": list(self.workers)},
                           "task": {"type": "worker", "index": self.task_index}})


def check_address(addr: str) -> str:
    """Validate one "host:port" (IPv6 as "[::1]:port"). Returns it stripped.

    Raises: ConfigError naming the address and the fix.
    """
    a = addr.strip()
    m = re.match(r"^\[([0-9A-Fa-f:.]+)\]:(\d+)$", a) or re.match(r"^([^:\[\]]+):(\d+)$", a)
    if not m:
        raise ConfigError("cluster", a, "is not host:port", "write each worker as host:port, e.g. 10.0.0.2:12345")
    host, port = m.group(1), int(m.group(2))
    if not 1 <= port <= 65535:
        raise ConfigError("cluster", a, "has a port outside 1-65535", "use a port between 1024 and 65535")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOST.match(host):
            raise ConfigError("cluster", a, "has an invalid host name",
                              "use a host name or an IP address") from None
    return a


def parse(cluster: str, task_index: int) -> Cluster:
    """Cluster from "host:port,host:port" and a task index.

    Raises: ConfigError for a malformed address, a duplicate, or an index out of range.
    """
    addrs = [check_address(a) for a in cluster.split(",") if a.strip()]
    if len(addrs) < 1:
        raise ConfigError("cluster", cluster, "names no worker", "give host:port,host:port")
    if len(set(addrs)) != len(addrs):
        raise ConfigError("cluster", cluster, "lists a worker twice", "give each host:port once")
    if isinstance(task_index, bool) or not isinstance(task_index, int) or not 0 <= task_index < len(addrs):
        raise ConfigError("task_index", task_index, f"is out of range for {len(addrs)} workers",
                          f"use 0 to {len(addrs) - 1} (0 is the chief)")
    return Cluster(tuple(addrs), task_index)


def from_env(env: Optional[dict] = None) -> Optional[Cluster]:
    """The Cluster described by TF_CONFIG in `env` (default os.environ), or None.

    Raises: ConfigError when TF_CONFIG is set but malformed or not a worker task.
    """
    text = (env if env is not None else os.environ).get("TF_CONFIG")
    if not text:
        return None
    try:
        tf_config = json.loads(text)
        workers = tf_config["cluster"]["worker"]
        task = tf_config["task"]
    except (ValueError, KeyError, TypeError):
        raise ConfigError("TF_CONFIG", text[:80], "is not a TF_CONFIG cluster description",
                          'use {"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": 0}}') \
            from None
    if task.get("type") != "worker":
        raise ConfigError("TF_CONFIG", task.get("type"), "is not a worker task",
                          "MultiWorkerMirroredStrategy needs task type 'worker' (task 0 is the chief)")
    if not isinstance(workers, list):
        raise ConfigError("TF_CONFIG", workers, "cluster.worker is not a list", "list the workers as host:port")
    return parse(",".join(workers), task.get("index"))


def check_port(addr: str) -> None:
    """Try to bind this task's "host:port" on all interfaces (as TensorFlow's gRPC
    server will), before TensorFlow starts; SO_REUSEADDR so that a closed
    connection's TIME_WAIT does not count.

    Raises: ConfigError (field cluster) naming the address when the port is taken
    or cannot be bound here.
    """
    a = check_address(addr)
    m = re.match(r"^\[([0-9A-Fa-f:.]+)\]:(\d+)$", a) or re.match(r"^([^:\[\]]+):(\d+)$", a)
    host, port = m.group(1), int(m.group(2))
    family, bind_host = (socket.AF_INET6, "::") if ":" in host else (socket.AF_INET, "0.0.0.0")
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((bind_host, port))
    except OSError as e:
        why = "is already in use on this machine" if e.errno == errno.EADDRINUSE else f"cannot be bound ({e.strerror})"
        raise ConfigError("cluster", a, f"cannot be used: port {port} {why}",
                          "stop the program that holds it or give this worker another port") from None
    finally:
        s.close()


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """`n` distinct TCP ports free on `host` right now (bound once, then released)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def local(n: int) -> list[str]:
    """Addresses for `n` workers on this host's loopback, on free ports."""
    return [f"127.0.0.1:{p}" for p in free_ports(n)]
