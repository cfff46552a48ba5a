"""``up``, ``down`` and ``status`` of a whole bed, and its recorded state (state.json)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from . import files, host, net
from .layout import STATE_ROOT, Layout, state_dir
from .run import BedError

GLOBAL_LOCK = STATE_ROOT / "ascend-bed.lock"  # serialises beds choosing management networks


@contextmanager
def locked() -> Iterator[None]:
    with open(GLOBAL_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def load_state(prefix: str) -> dict | None:
    path = state_dir(prefix) / "state.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise BedError(f"{path} is corrupt ({exc}); run `bed.py down --prefix {prefix}`") from exc


def layout_of(state: dict) -> Layout:
    return Layout(state["prefix"], state["hosts"], state["devices"], state["chip"], state["mgmt_index"])


def health(state: dict) -> dict[str, bool]:
    """Host name -> its recorded sshd is alive and listening."""
    layout = layout_of(state)
    return {h: host.is_our_sshd(pid, layout, h) and host.listening(pid, str(layout.mgmt_ip(h))) for h, pid in state["pids"].items()}


def _write_state(layout: Layout, pids: dict[str, int], repo: Path, with_sim: bool) -> dict:
    state = {
        "prefix": layout.prefix,
        "hosts": layout.hosts,
        "devices": layout.devices,
        "chip": layout.chip,
        "mgmt_index": layout.mgmt_index,
        "repo": str(repo),
        "simulator": with_sim,
        "pids": pids,
        "inventory": str(layout.inventory),
        "mgmt_ips": {h: str(layout.mgmt_ip(h)) for h in layout.host_names},
        "netns": {h: layout.host_netns(h) for h in layout.host_names},
        "fabric_netns": layout.fabric_netns,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tmp = layout.state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, layout.state_file)
    return state


def up(prefix: str, hosts: int, devices: int, chip: str, repo: Path, with_sim: bool = True) -> dict:
    """Bring bed ``prefix`` up (idempotent: a healthy bed of the same shape is left alone)."""
    Layout(prefix, hosts, devices, chip)  # validate before touching anything
    sim = files.sim_path(repo)
    if with_sim and not sim.exists():
        raise BedError(f"{sim} is missing: the simulator has not landed in this checkout; use --no-sim for bare hosts")
    with locked():
        net.ensure_guard_route()  # before any host exists, and never removed
        state = load_state(prefix)
        if state is not None:
            same = (state["hosts"], state["devices"], state["chip"], state["simulator"]) == (hosts, devices, chip, with_sim)
            if same and all(health(state).values()):
                return state
            if not same:
                raise BedError(
                    f"bed {prefix} is up with {state['hosts']} hosts x {state['devices']} {state['chip']} "
                    f"(simulator {'on' if state['simulator'] else 'off'}); run `bed.py down --prefix {prefix}` first"
                )
        _down_locked(prefix)  # leftovers of a broken or half-built bed
        layout = Layout(prefix, hosts, devices, chip, net.free_mgmt_index())
        try:
            return _build(layout, repo, with_sim)
        except BaseException:
            _down_locked(prefix)
            raise


def _build(layout: Layout, repo: Path, with_sim: bool) -> dict:
    layout.state_dir.mkdir(mode=0o700, parents=True)
    layout.control_path_dir.mkdir(mode=0o700)
    host.keygen(layout.client_key, f"ascend-bed-{layout.prefix}")
    host_keys = {h: host.prepare(layout, h, repo, with_sim) for h in layout.host_names}
    net.create(layout)
    procs = {h: host.start(layout, h) for h in layout.host_names}
    pids = {h: p.pid for h, p in procs.items()}
    # Record PIDs before waiting, so that a failed start can still be cleaned up by PID.
    _write_state(layout, pids, repo, with_sim)
    host.wait_ready(layout, procs)
    layout.known_hosts.write_text(files.known_hosts(layout, host_keys))
    layout.ssh_config.write_text(files.ssh_config(layout))
    layout.inventory.write_text(files.inventory(layout))
    return _write_state(layout, pids, repo, with_sim)


def down(prefix: str) -> None:
    """Take bed ``prefix`` down (idempotent); the guard route stays."""
    with locked():
        _down_locked(prefix)


def _down_locked(prefix: str) -> None:
    state = load_state(prefix)
    pids: dict[str, int] = state["pids"] if state else {}
    # Hosts are found by their netns names too, in case state.json was never written.
    hosts = set(pids) | {ns[len(prefix) + 1 :] for ns in net.bed_netns(prefix) if ns != f"{prefix}-fab"}
    layout = Layout.naming(prefix)
    for h in sorted(hosts):
        host.stop(layout, h, pids.get(h))
        host.remove_faketime_shared(layout, h)
    net.destroy(prefix)
    shutil.rmtree(state_dir(prefix), ignore_errors=True)


def list_beds() -> list:
    """Prefixes of beds with a state directory or namespaces on this machine."""
    prefixes = {p.name[len("ascend-bed-") :] for p in STATE_ROOT.glob("ascend-bed-*") if p.is_dir()}
    return sorted(prefixes)
