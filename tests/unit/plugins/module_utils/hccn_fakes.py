"""A fake AnsibleModule whose ``run_tool`` answers hccn_tool / npu-smi calls from a transcript (unit tests)."""

from __future__ import annotations

import threading
from typing import Any

HCCN = "/usr/local/Ascend/driver/tools/hccn_tool"
NPU_SMI = "/usr/local/sbin/npu-smi"

NO_GATEWAY = (2, "", "Get gateway failed, because no gateway was preset there!\n")
NO_IP = (1, "", "Get ipconf failed, because no ip was preset there!\n")
INVALID_DEVICE = (4, "", "Get invalid device id.\n")
EXEC_FAILED = (1, "", "Command execute failed!\n")

DEFAULT_PARAMS: dict[str, Any] = {
    "hccn_tool": None,
    "npu_smi": None,
    "hccn_conf": "/nonexistent/hccn.conf",
    "devices": None,
    "gather": [],
    "parallel": 16,
    "timeout": 30,
    "dev_dir": "/nonexistent/dev",
}


def device_answers(dev, ip="", netmask="255.255.255.0", gateway="", netdetect="", health=None, link="UP"):
    """Transcript entries (argv tuple -> (rc, stdout, stderr)) for the five base queries of one device."""
    base = (HCCN, "-i", str(dev))
    if health is None:
        health = "Success" if netdetect else "Init"
    return {
        base + ("-ip", "-g"): (0, "ipaddr:%s\nnetmask:%s\n" % (ip, netmask), "") if ip else NO_IP,
        base + ("-gateway", "-g"): (0, "default gateway:%s, Iface:eth%d\n" % (gateway, dev), "") if gateway else NO_GATEWAY,
        base + ("-netdetect", "-g"): (0, "netdetect addr: %s\n" % (netdetect or "0.0.0.0"), ""),
        base + ("-net_health", "-g"): (0, "net health status: %s\n" % health, ""),
        base + ("-link", "-g"): (0, "link status: %s\n" % link, ""),
    }


def failing_device(dev, answer=INVALID_DEVICE):
    base = (HCCN, "-i", str(dev))
    return {base + (q, "-g"): answer for q in ("-ip", "-gateway", "-netdetect", "-net_health", "-link", "-tls", "-mac")}


def info_list(npus, chips=1):
    lines = ["Total Count                    : %d" % len(npus), ""]
    for npu in npus:
        lines += ["NPU ID                         : %d" % npu, "Chip Count                     : %d" % chips, ""]
    return "\n".join(lines) + "\n"


INFO_TABLE_910B = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.0                   Version: 23.0.0                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 95.6        36                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3378 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 93.1        35                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3378 / 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 0                                                            |
+===========================+===============+====================================================+
"""


class FakeModule:
    """Just enough of AnsibleModule (params, check_mode, get_bin_path), plus ``run_tool``: the fake runner
    the tool clients take instead of ``_command.run`` (thread-safe)."""

    def __init__(self, params=None, transcript=None, bins=None, delay=0.0):
        self.params = dict(DEFAULT_PARAMS)
        self.params.update(params or {})
        self.check_mode = False
        self.transcript = dict(transcript or {})
        self.bins = {"hccn_tool": HCCN} if bins is None else bins
        self.calls = []
        self.delay = delay
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return self.bins.get(name)

    def run_tool(self, argv, timeout=None):
        assert isinstance(argv, list), "a tool must get an argument list, never a shell string"
        with self._lock:
            self.calls.append(tuple(argv))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                import time

                time.sleep(self.delay)
            key = tuple(argv)
            if key not in self.transcript:
                return 3, "", "Get unknown option!\n"
            return self.transcript[key]
        finally:
            with self._lock:
                self.active -= 1
