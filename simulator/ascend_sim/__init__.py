"""Stand-ins for Huawei's ``hccn_tool`` and ``npu-smi`` (see docs/simulator.md).

Stdlib only, Python 3.8+. The entry points in ``simulator/bin/`` run under ``python3 -S`` and
import only the modules a command needs; keep this file free of imports.
"""

__version__ = "1.0.0"
