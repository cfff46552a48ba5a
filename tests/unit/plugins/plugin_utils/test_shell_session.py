"""The watch's shell session: one shell for every probe, answers exact, a shell that went is a connection failure."""

from __future__ import annotations

import json
import os
import types

import pytest
from ansible.errors import AnsibleConnectionFailure

from ansible_collections.ascend.cluster.plugins.module_utils._job import files, group
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import shell_session


@pytest.fixture
def session():
    opened = shell_session.ShellSession([shell_session.SHELL])
    yield opened
    opened.close()


def test_every_command_runs_in_the_one_shell_and_its_answer_is_exact(session):
    # $$ inside the subshell is the session's shell (POSIX): one shell for every command; only the subshell forks, on the server
    parents = {session.run("echo $$") for _probe in range(20)}
    assert parents == {f"{session.pid}\n"}
    assert session.run("printf 'no newline'") == "no newline"
    assert session.run("printf 'a\\n\\nb\\n\\n'") == "a\n\nb\n\n"
    assert session.run("echo to stderr >&2") == ""  # stderr is dropped, not mixed into the answer
    assert session.run("true") == ""
    assert session.answered == 24


def test_a_command_that_exits_or_fails_does_not_end_the_session(session):
    assert session.run("echo before; exit 3; echo never") == "before\n"
    assert session.run("this-command-does-not-exist; echo after") == "after\n"
    assert session.run("cat") == ""  # stdin is /dev/null: a command reading it cannot eat the next probe
    assert session.run("echo still") == "still\n"


def test_the_watchs_read_answers_through_the_session_as_through_ssh(session, tmp_path):
    job_dir = tmp_path / "jobs" / "j"
    job_dir.mkdir(parents=True)
    (job_dir / files.JOB_FILE).write_text("{}")
    files.write_json(str(job_dir / files.GROUP_FILE), {"status": group.RUNNING, "counts": {"running": 8}})
    ran, text = files.parse_read(session.run(files.read_command(str(job_dir))))
    assert ran and json.loads(text)["counts"] == {"running": 8}


def test_a_shell_that_has_gone_raises_a_connection_failure_and_close_is_quiet(session):
    os.kill(session.pid, 9)
    with pytest.raises(AnsibleConnectionFailure, match=r"ended|failed"):
        session.run("echo hello")
    session.close()
    session.close()


def test_a_shell_that_cannot_start_is_a_connection_failure():
    with pytest.raises(AnsibleConnectionFailure, match="cannot start /nonexistent/ssh"):
        shell_session.ShellSession(["/nonexistent/ssh", "host", "/bin/sh"])


def fake_connection(transport, become=None, build=None, password=None):
    plugin = types.SimpleNamespace(
        transport=transport, become=become, _play_context=types.SimpleNamespace(remote_addr="10.0.0.1", password=None)
    )
    plugin.get_option = {"host": "h1", "ssh_executable": "ssh", "password": password}.get
    plugin._build_command = build or (
        lambda binary, subsystem, *args: [binary.encode(), b"-o", b"ControlPath=/cp", *[a.encode() for a in args]]
    )
    return plugin


def test_the_session_opens_the_tasks_own_connection_or_none_applies():
    assert shell_session.session_argv(fake_connection("local")) == ["/bin/sh"]
    assert shell_session.session_argv(fake_connection("ssh")) == ["ssh", "-o", "ControlPath=/cp", "h1", "/bin/sh"]
    assert shell_session.session_argv(fake_connection("ansible.builtin.ssh")) == ["ssh", "-o", "ControlPath=/cp", "h1", "/bin/sh"]
    assert shell_session.session_argv(fake_connection("paramiko")) is None
    assert shell_session.session_argv(fake_connection("ssh", become=object())) is None

    def broken(*_args):
        raise TypeError("an ssh plugin of another version")

    assert shell_session.session_argv(fake_connection("ssh", build=broken)) is None
    assert shell_session.session_argv(fake_connection("ssh", password="vaulted")) is None  # sshpass needs the ssh plugin's pipe

    def sshpass(binary, subsystem, *args):
        return [b"sshpass", b"-d9", binary.encode(), *[a.encode() for a in args]]

    assert shell_session.session_argv(fake_connection("ssh", build=sshpass)) is None
    first = shell_session.ShellSession(["/bin/true"])  # a session that ends before its first answer
    with pytest.raises(AnsibleConnectionFailure):
        first.run("echo hello")
    assert first.answered == 0
    first.close()
