"""_command.run: how every hccn_tool / npu-smi call is run (argument list, timeout, no stdin)."""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils import _command


def test_output_rc_and_stderr_are_returned_as_text():
    rc, out, err = _command.run(["sh", "-c", 'printf "ipaddr:1.2.3.4\\n"; printf "w\\303\\274rn\\n" >&2; exit 3'])
    assert (rc, out, err) == (3, "ipaddr:1.2.3.4\n", "w\u00fcrn\n")


def test_arguments_are_never_split_or_expanded_by_a_shell():
    rc, out, _err = _command.run(["printf", "%s|", "a b", "$HOME", "*"])
    assert (rc, out) == (0, "a b|$HOME|*|")


def test_env_adds_to_the_environment_for_the_child_only(monkeypatch):
    monkeypatch.setenv("ASCEND_TEST_KEPT", "kept")
    monkeypatch.setenv("LC_ALL", "zh_CN.UTF-8")
    rc, out, _err = _command.run(["sh", "-c", 'printf "%s %s" "$ASCEND_TEST_KEPT" "$LC_ALL"'], env={"LC_ALL": "C"})
    assert (rc, out) == (0, "kept C")
    assert os.environ["LC_ALL"] == "zh_CN.UTF-8"


def test_a_shell_string_is_refused():
    with pytest.raises(TypeError, match="argument list"):
        _command.run("hccn_tool -i 0 -ip -g")  # type: ignore[arg-type]  # the wrong type is the point


def test_stdin_is_closed_so_a_reader_does_not_hang():
    assert _command.run(["cat"], timeout=10) == (0, "", "")


def test_missing_binary_raises_oserror():
    with pytest.raises(OSError):
        _command.run(["/nonexistent/hccn_tool", "-i", "0", "-ip", "-g"])


def _gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_hung_call_is_stopped_with_everything_it_started(tmp_path):
    pidfile = tmp_path / "pid"
    script = 'sleep 60 & echo $! > "$1"; echo partial; echo raw >&2; sleep 60'
    rc, out, err = _command.run(["sh", "-c", script, "sh", str(pidfile)], timeout=0.5)
    assert (rc, out, err) == (_command.TIMEOUT_RC, "partial\n", "raw\n")
    grandchild = int(pidfile.read_text())
    for dummy in range(100):  # the kill is synchronous; reaping by init may lag a little
        if _gone(grandchild):
            break
        time.sleep(0.05)
    assert _gone(grandchild)


def test_no_timeout_waits_for_the_answer():
    assert _command.run(["sh", "-c", "sleep 0.2; echo done"], timeout=None) == (0, "done\n", "")


def test_the_child_runs_in_its_own_session():
    rc, out, _err = _command.run(["sh", "-c", "cut -d' ' -f6 /proc/$$/stat"])
    assert rc == 0 and int(out) != os.getsid(0)
