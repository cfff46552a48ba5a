# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host firewall (ufw or firewalld) and the HCCL port reservation: read, plan, run.

What the module ``host_firewall`` does in one call per host: pick the firewall from
``/etc/os-release`` (or take the one given), read its state, plan only the commands still
needed, run them (not in check mode), persist the port reservation, and say what was found and
done. The parsers and planners are pure functions; :class:`HostFirewall` reads and runs through
one ``runner`` (``_command.run``: argument lists, never a shell), always with ``LC_ALL=C`` so
that what is parsed (``Status: active``) reads the same on every locale.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from ansible_collections.ascend.cluster.plugins.module_utils import _command
from ansible_collections.ascend.cluster.plugins.module_utils._host.port_ranges import format_ranges, merge_ranges
from ansible_collections.ascend.cluster.plugins.module_utils._host.text_file import read_text, write_text_atomic

if TYPE_CHECKING:  # types only: nothing here runs, so the 3.8 floor does not apply
    from typing import Any, Callable, Iterable

    Runner = Callable[..., tuple[int, str, str]]

MODES = ("disable", "open_ports")
# Mode none reads and changes nothing; its result (the role's report row) says so.
MODE_NONE = "none"
NOT_CHECKED = {"mode": MODE_NONE, "found": "not checked (mode none)", "action": "nothing to do"}
BACKENDS = ("auto", "ufw", "firewalld")
OS_RELEASE_FILES = ("/etc/os-release", "/usr/lib/os-release")
RESERVED_PORTS_FILE = "/proc/sys/net/ipv4/ip_local_reserved_ports"
RESERVED_PORTS_KEY = "net.ipv4.ip_local_reserved_ports"
# The persisted file's first line. Kept word for word from the role's earlier copy task: a new
# text would rewrite (and report changed on) every host once.
SYSCTL_FILE_HEADER = "# Written by the ascend.cluster.firewall role: keep ephemeral ports out of HCCL's host range.\n"
SYSCTL_FILE_MODE = 0o644
# Seconds one firewall command may take (firewall-cmd on a loaded host takes a few).
COMMAND_TIMEOUT = 120
C_LOCALE = {"LC_ALL": "C"}

# /etc/os-release ID, or a word of ID_LIKE, -> the firewall its family runs. The same families
# as the OS_FAMILY groups of ansible's distribution facts: Debian -> ufw; RedHat, openEuler and
# Kylin -> firewalld.
UFW_OS_IDS = frozenset(
    ("debian", "ubuntu", "raspbian", "neon", "linuxmint", "devuan", "kali", "pop", "parrot", "pardus", "uos", "deepin", "osmc")
)
FIREWALLD_OS_IDS = frozenset(
    (
        "rhel",
        "centos",
        "fedora",
        "rocky",
        "almalinux",
        "ol",
        "amzn",
        "scientific",
        "cloudlinux",
        "virtuozzo",
        "alinux",
        "euleros",
        "openeuler",
        "kylin",
        "tencentos",
        "eurolinux",
        "miracle",
    )
)

UFW_STATUS = ["ufw", "status"]
UFW_ADDED = ["ufw", "show", "added"]
SYSTEMCTL_IS_ACTIVE = ["systemctl", "is-active", "firewalld"]
SYSTEMCTL_IS_ENABLED = ["systemctl", "is-enabled", "firewalld"]
# systemctl's answers: is-active 0 active, 3 inactive, 4 no such unit; is-enabled 0 enabled,
# 1 disabled or not found. Any other rc (no systemd, a bad call) is an error.
IS_ACTIVE_RCS = (0, 3, 4)
IS_ENABLED_RCS = (0, 1)
FIREWALLD_START = ["systemctl", "enable", "--now", "firewalld"]
FIREWALLD_STOP = ["systemctl", "disable", "--now", "firewalld"]
ENABLED_WORDS = ("enabled", "enabled-runtime", "alias")

_PORT = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")


class FirewallError(Exception):
    """What to tell the operator (``msg``) and the details for the task result."""

    def __init__(self, msg: str, **details: Any) -> None:
        super().__init__(msg)
        self.msg = msg
        self.details = details


# -- which firewall ---------------------------------------------------------------------------


def parse_os_release(text: str) -> dict[str, str]:
    """``KEY=value`` lines of os-release(5), quotes removed."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or key.startswith("#"):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        fields[key.strip()] = value
    return fields


def backend_for_os(fields: dict[str, str]) -> str | None:
    """``ufw`` or ``firewalld`` for the OS of these os-release fields (ID first, then ID_LIKE); None if unknown."""
    for name in [fields.get("ID", "")] + fields.get("ID_LIKE", "").split():
        name = name.lower()
        if name in UFW_OS_IDS:
            return "ufw"
        if name in FIREWALLD_OS_IDS:
            return "firewalld"
    return None


def describe_os(fields: dict[str, str]) -> str:
    name = fields.get("PRETTY_NAME") or fields.get("NAME") or "an unnamed OS"
    return "%s (ID=%s, ID_LIKE=%s)" % (name, fields.get("ID", ""), fields.get("ID_LIKE", ""))


# -- the ports training needs -----------------------------------------------------------------


def port_problem(entry: str) -> str | None:
    """Why ``entry`` is not a TCP port (``22``) or range (``9000-9010``); None when it is one."""
    match = _PORT.match(entry)
    if not match:
        return "%r is neither a port nor a range like 9000-9010" % entry
    low = int(match.group(1))
    high = int(match.group(2) or low)
    if low < 1 or high > 65535:
        return "%s is outside 1-65535" % entry
    if low > high:
        return "%s runs backwards (write %d-%d)" % (entry, high, low)
    return None


def training_ports(ssh_port: int, hccl_base_port: int, hccl_port_count: int, master_ports: Iterable, extra_ports: Iterable) -> list[str]:
    """SSH, the HCCL range, the master ports and the extra ports, in that order, each once.

    Raises FirewallError naming every bad entry and the option it came from.
    """
    hccl = "%d-%d" % (hccl_base_port, hccl_base_port + hccl_port_count - 1)
    entries = [("ssh_port", str(ssh_port)), ("HCCL range (hccl_base_port, hccl_port_count)", hccl)]
    entries += [("master_ports", str(port)) for port in master_ports]
    entries += [("extra_ports", str(port)) for port in extra_ports]
    problems = []
    if hccl_port_count < 1:
        problems.append("hccl_port_count %d: HCCL needs at least 1 port (16, or 32 on newer CANN)" % hccl_port_count)
        entries.pop(1)
    problems += ["%s: %s" % (option, problem) for option, problem in ((o, port_problem(e)) for o, e in entries) if problem]
    if problems:
        raise FirewallError("bad ports: %s; ports are numbers 1-65535 or ranges like 9000-9010" % "; ".join(problems))
    return list(dict.fromkeys(entry for dummy, entry in entries))


# -- ufw --------------------------------------------------------------------------------------


def ufw_active(status_out: str) -> bool:
    """Whether ``ufw status`` says ``Status: active`` (``inactive`` is not)."""
    return any(line.strip() == "Status: active" for line in status_out.splitlines())


def ufw_allowed(added_out: str) -> list[str]:
    """The targets of the ``ufw allow ...`` rules ``ufw show added`` lists (``22/tcp``), comments dropped."""
    rules = []
    for line in added_out.splitlines():
        if line.startswith("ufw allow "):
            rules.append(line[len("ufw allow ") :].split(" comment ", 1)[0].strip())
    return rules


def ufw_rule(port: str) -> str:
    """``60000-60015`` -> ``60000:60015/tcp`` (ufw writes ranges with a colon)."""
    return port.replace("-", ":") + "/tcp"


def plan_ufw(mode: str, active: bool, allowed: list[str], ports: list[str]) -> list[list[str]]:
    """disable: ``ufw disable`` when active. open_ports: the missing allow rules in ``ports`` order
    (SSH first), then ``ufw --force enable`` when inactive."""
    if mode == "disable":
        return [["ufw", "disable"]] if active else []
    plan = [["ufw", "allow", rule] for rule in map(ufw_rule, ports) if rule not in allowed]
    if not active:
        plan.append(["ufw", "--force", "enable"])
    return plan


# -- firewalld --------------------------------------------------------------------------------


def firewalld_state(is_active_out: str, is_enabled_out: str) -> dict[str, Any]:
    """What ``systemctl is-active`` / ``is-enabled firewalld`` printed, as installed / active /
    enabled and the words the report shows (``firewalld active, enabled``)."""
    active, enabled = is_active_out.strip(), is_enabled_out.strip()
    installed = enabled not in ("", "not-found")
    return dict(
        installed=installed,
        active=active == "active",
        enabled=enabled in ENABLED_WORDS,
        found="firewalld %s, %s" % (active, enabled) if installed else "firewalld not installed",
    )


def zone_args(zone: str) -> list[str]:
    return ["--zone=" + zone] if zone else []


def firewalld_list_ports(zone: str, permanent: bool) -> list[str]:
    return ["firewall-cmd"] + zone_args(zone) + (["--permanent"] if permanent else []) + ["--list-ports"]


def plan_firewalld_ports(zone: str, ports: list[str], saved: list[str], running: list[str]) -> list[list[str]]:
    """The ports missing from the saved configuration, then those missing from the running one:
    both are added, so nothing needs ``--reload`` (which would drop running-only rules)."""
    wanted = [port + "/tcp" for port in ports]
    plan = [["firewall-cmd", "--permanent"] + zone_args(zone) + ["--add-port=" + port] for port in wanted if port not in saved]
    return plan + [["firewall-cmd"] + zone_args(zone) + ["--add-port=" + port] for port in wanted if port not in running]


def added_ports(plan: list[list[str]], permanent: bool) -> list[str]:
    """The ports the ``--add-port`` commands of ``plan`` add to the saved (or the running) configuration."""
    return [argv[-1].split("=", 1)[1] for argv in plan if argv[-1].startswith("--add-port=") and ("--permanent" in argv) == permanent]


# -- the HCCL port reservation ----------------------------------------------------------------


def parse_port_ranges(text: str) -> list[tuple[int, int]]:
    """``1000,60000-60015`` -> ``[(1000, 1000), (60000, 60015)]``; ValueError on anything else."""
    ranges = []
    for part in text.split(","):
        part = part.strip()
        if part:
            low, dummy, high = part.partition("-")
            ranges.append((int(low), int(high or low)))
    return ranges


def reservation(current: str, low: int, high: int) -> tuple[bool, str]:
    """(whether ``low-high`` is reserved already, the value to keep or set): what is reserved
    already stays, merged with the range the way the kernel merges it."""
    ranges = merge_ranges(parse_port_ranges(current))
    if any(first <= low and high <= last for first, last in ranges):
        return True, current.strip()
    return False, format_ranges(merge_ranges(ranges + [(low, high)]))


def sysctl_set(value: str) -> list[str]:
    return ["sysctl", "-w", "%s=%s" % (RESERVED_PORTS_KEY, value)]


def sysctl_file_text(value: str) -> str:
    return "%s%s = %s\n" % (SYSCTL_FILE_HEADER, RESERVED_PORTS_KEY, value)


def action_text(plan: list[list[str]], written: list[str], check_mode: bool) -> str:
    """The report's words: ``nothing to do``, or ``would run: ...`` / ``ran: ...`` and the files written."""
    steps = [" ".join(argv) for argv in plan] + ["write " + path for path in written]
    if not steps:
        return "nothing to do"
    return ("would run: " if check_mode else "ran: ") + "; ".join(steps)


# -- one host ---------------------------------------------------------------------------------


class HostFirewall:
    """One host: :meth:`run` reads, plans, runs what is missing (nothing in check mode) and returns
    the task result; raises FirewallError with what to fix (and what already ran)."""

    def __init__(
        self,
        params: dict[str, Any],
        check_mode: bool = False,
        runner: Runner | None = None,
        os_release_files: Iterable[str] = OS_RELEASE_FILES,
        reserved_ports_file: str = RESERVED_PORTS_FILE,
        euid: int | None = None,
    ) -> None:
        self.params = params
        self.check_mode = check_mode
        self.runner = runner or _command.run
        self.os_release_files = tuple(os_release_files)
        self.reserved_ports_file = reserved_ports_file
        self.euid = os.geteuid() if euid is None else euid
        self.plan: list[list[str]] = []
        self.ran: list[list[str]] = []
        self.before: dict[str, Any] = {}
        self.after: dict[str, Any] = {}

    def run(self) -> dict[str, Any]:
        params = self.params
        ports = training_ports(
            params["ssh_port"], params["hccl_base_port"], params["hccl_port_count"], params["master_ports"], params["extra_ports"]
        )
        backend = params["backend"] if params["backend"] != "auto" else self._backend_from_os()
        found = self._ufw(ports) if backend == "ufw" else self._firewalld(ports)
        files = {}
        if params["mode"] == "open_ports" and params["reserve_hccl_ports"]:
            files = self._reserve()
        if not self.check_mode:
            for argv in self.plan[len(self.ran) :]:
                self._change(argv)
            for path, text in files.items():
                self._write(path, text)
        return dict(
            changed=bool(self.plan or files),
            mode=params["mode"],
            backend=backend,
            found=found,
            ports=ports,
            plan=self.plan,
            action=action_text(self.plan, list(files), self.check_mode),
            diff=dict(before=self.before, after=self.after),
        )

    # -- reading and running

    def _call(self, argv: list[str], ok_rcs: Iterable[int] = (0,), missing_ok: bool = False) -> tuple[int, str, str] | None:
        """``(rc, stdout, stderr)`` of a command whose rc is in ``ok_rcs``; None when the binary
        is missing and ``missing_ok``; else FirewallError naming the command and its stderr."""
        try:
            rc, out, err = self.runner(argv, timeout=COMMAND_TIMEOUT, env=C_LOCALE)
        except FileNotFoundError as exc:
            if missing_ok:
                return None
            raise self._failure("`%s` could not start (%s)" % (" ".join(argv), exc.strerror or exc), argv) from exc
        except OSError as exc:
            raise self._failure("`%s` could not start (%s)" % (" ".join(argv), exc.strerror or exc), argv) from exc
        if rc not in ok_rcs:
            what = "timed out after %d s" % COMMAND_TIMEOUT if rc == _command.TIMEOUT_RC else "failed (rc %d)" % rc
            said = (err.strip() or out.strip() or "no output").replace("\n", " / ")
            raise self._failure("`%s` %s: %s" % (" ".join(argv), what, said), argv, rc=rc, stdout=out, stderr=err)
        return rc, out, err

    def _read(self, argv: list[str], ok_rcs: Iterable[int] = (0,)) -> str:
        """stdout of a command that must run (``_call`` never answers None without ``missing_ok``)."""
        answer = self._call(argv, ok_rcs)
        return answer[1] if answer else ""

    def _change(self, argv: list[str]) -> None:
        self._call(argv)
        self.ran.append(argv)

    def _write(self, path: str, text: str) -> None:
        try:
            write_text_atomic(path, text, SYSCTL_FILE_MODE)
        except OSError as exc:
            raise self._failure("cannot write %s (%s)" % (path, exc.strerror or exc), ["write", path]) from exc

    def _failure(self, what: str, argv: list[str], **details: Any) -> FirewallError:
        hint = "" if self.euid == 0 else " - this runs as uid %d; the firewall needs root (become: true)" % self.euid
        if self.ran:
            tail = "; already ran: %s" % "; ".join(" ".join(done) for done in self.ran)
        else:
            tail = "; nothing was changed"
        return FirewallError(what + hint + tail, cmd=argv, ran=list(self.ran), changed=bool(self.ran), **details)

    # -- the backends

    def _backend_from_os(self) -> str:
        for path in self.os_release_files:
            text = read_text(path)
            if text is not None:
                fields = parse_os_release(text)
                backend = backend_for_os(fields)
                if backend is None:
                    raise FirewallError(
                        "no firewall known for %s; set backend to ufw or firewalld (role: ascend_firewall_backend), "
                        "or leave the firewall alone (role: ascend_firewall_mode=none)" % describe_os(fields),
                        changed=False,
                    )
                return backend
        raise FirewallError(
            "cannot tell the OS: none of %s exists; set backend to ufw or firewalld (role: ascend_firewall_backend)"
            % ", ".join(self.os_release_files),
            changed=False,
        )

    def _missing(self, name: str, install: str) -> FirewallError:
        return FirewallError(
            "%s is not installed; install it (%s) or use mode=disable (role: ascend_firewall_mode=disable)" % (name, install),
            changed=False,
        )

    def _ufw(self, ports: list[str]) -> str:
        mode = self.params["mode"]
        status = self._call(UFW_STATUS, missing_ok=True)
        if status is None:
            if mode == "open_ports":
                raise self._missing("ufw", "apt-get install ufw")
            return "ufw not installed"
        active = ufw_active(status[1])
        allowed = ufw_allowed(self._read(UFW_ADDED)) if mode == "open_ports" else []
        planned = plan_ufw(mode, active, allowed, ports)
        self.plan += planned
        self.before["ufw"] = "active" if active else "inactive"
        self.after["ufw"] = "inactive" if mode == "disable" else "active"
        if mode == "open_ports":
            self.before["ufw rules"] = allowed
            self.after["ufw rules"] = allowed + [argv[2] for argv in planned if argv[1] == "allow"]
        return "ufw " + self.before["ufw"]

    def _firewalld(self, ports: list[str]) -> str:
        mode, zone = self.params["mode"], self.params["firewalld_zone"]
        state = firewalld_state(self._read(SYSTEMCTL_IS_ACTIVE, IS_ACTIVE_RCS), self._read(SYSTEMCTL_IS_ENABLED, IS_ENABLED_RCS))
        if not state["installed"]:
            if mode == "open_ports":
                raise self._missing("firewalld", "dnf install firewalld")
            return state["found"]
        self.before["firewalld"] = state["found"].split(" ", 1)[1]
        if mode == "disable":
            stop = state["active"] or state["enabled"]
            self.plan += [FIREWALLD_STOP] if stop else []
            self.after["firewalld"] = "inactive, disabled" if stop else self.before["firewalld"]
            return state["found"]
        if not (state["active"] and state["enabled"]):
            # started now, not with the rest: the ports are read from the running firewalld
            self.plan.append(FIREWALLD_START)
            if not self.check_mode:
                self._change(FIREWALLD_START)
        saved: list[str] = []
        running: list[str] = []
        if state["active"] or not self.check_mode:
            saved = self._read(firewalld_list_ports(zone, permanent=True)).split()
            running = self._read(firewalld_list_ports(zone, permanent=False)).split()
        planned = plan_firewalld_ports(zone, ports, saved, running)
        self.plan += planned
        self.after["firewalld"] = "active, enabled"
        self.before["saved ports"] = saved
        self.after["saved ports"] = saved + added_ports(planned, permanent=True)
        self.before["running ports"] = running if state["active"] else []
        self.after["running ports"] = running + added_ports(planned, permanent=False)
        return state["found"]

    def _reserve(self) -> dict[str, str]:
        """Plan ``sysctl -w`` when the HCCL range is not reserved; the sysctl file's new text by path when it differs."""
        low = self.params["hccl_base_port"]
        high = low + self.params["hccl_port_count"] - 1
        current = read_text(self.reserved_ports_file)
        if current is None:
            raise FirewallError(
                "%s does not exist (this kernel cannot reserve ports); set reserve_hccl_ports=false "
                "(role: ascend_firewall_reserve_hccl_ports=false)" % self.reserved_ports_file,
                changed=False,
            )
        try:
            reserved, value = reservation(current, low, high)
        except ValueError as exc:
            raise FirewallError("cannot read %s: %r" % (self.reserved_ports_file, current), changed=False) from exc
        if not reserved:
            self.plan.append(sysctl_set(value))
        self.before["reserved ports"] = current.strip()
        self.after["reserved ports"] = value
        path = self.params["sysctl_file"]
        try:
            on_disk = read_text(path)
        except OSError as exc:
            raise FirewallError("cannot read %s (%s)" % (path, exc.strerror or exc), changed=False) from exc
        wanted = sysctl_file_text(value)
        if on_disk == wanted:
            return {}
        self.before[path] = on_disk or ""
        self.after[path] = wanted
        return {path: wanted}
