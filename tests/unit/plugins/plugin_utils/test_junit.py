"""plugin_utils._junit and the junit_report filter: the JUnit XML of smoke, prepare and train, read with junitparser."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.cluster.plugins.filter.common import FilterModule, junit_report
from ansible_collections.ascend.cluster.plugins.plugin_utils import _junit
from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError
from tests.helpers.junit import Case, read_report

LINK = "link DOWN - check the optics/cable of NPU 3 (eth3) and its switch port"
SMOKE = {
    "rows": [
        {"stage": "health", "server": "server1", "device": 3, "rank": 11, "result": "FAIL", "detail": LINK},
        {"stage": "rank_table", "server": None, "device": None, "rank": None, "result": "OK", "detail": "16 ranks"},
        {"stage": "launch", "server": "server0", "device": None, "rank": None, "result": "FAIL", "detail": "device 2 held\nby pid 7"},
        {"stage": "rank", "server": "server0", "device": 0, "rank": 0, "result": "OK", "detail": "7 checks passed"},
    ]
}


def test_filter_is_registered_under_its_name():
    assert FilterModule().filters()["junit_report"] is junit_report


def test_smoke_rows_become_one_case_each_with_the_findings_one_line_cause():
    suite, cases = read_report(junit_report(SMOKE, "smoke"))
    assert (suite.name, suite.tests, suite.failures) == ("ascend.cluster.smoke", 4, 2)
    assert cases == [
        Case("smoke.health", "server1 device 3 rank 11", "failed", LINK, LINK),
        Case("smoke.rank_table", "job", "passed", None, None),
        Case("smoke.launch", "server0", "failed", "device 2 held", "device 2 held\nby pid 7"),
        Case("smoke.rank", "server0 device 0 rank 0", "passed", None, None),
    ]


def _summary(**more):
    ranks = [
        {
            "rank_id": 0,
            "server": "10.0.0.1",
            "device_id": 0,
            "state": "stopped",
            "outcome": "stopped by fail-fast (SIGTERM)",
            "duration_s": 2.5,
        },
        {"rank_id": 1, "server": "10.0.0.1", "device_id": 1, "state": "done", "outcome": "exit 0", "duration_s": 3.0},
        {"rank_id": 3, "server": "10.0.0.2", "device_id": 1, "state": "failed", "outcome": "exit 1", "error": None, "duration_s": 1.25},
    ]
    return dict({"ranks": ranks, "failure": {"rank_id": 3, "rc": 1}, "attempts": []}, **more)


def test_train_has_each_servers_preflight_and_each_rank_a_rank_stopped_by_fail_fast_is_skipped():
    hostvars = {"h1": {"_ascend_preflight": {"changed": False}}, "h2": {"_ascend_preflight": {"changed": False}}, "spare": {}}
    suite, cases = read_report(junit_report(["h1", "h2", "spare"], "train", hostvars=hostvars, playbook="train", summary=_summary()))
    assert [(c.classname, c.name, c.outcome, c.message) for c in cases] == [
        ("train.preflight", "h1", "passed", None),
        ("train.preflight", "h2", "passed", None),
        ("train.rank", "10.0.0.1 device 0 rank 0", "skipped", "stopped by fail-fast (SIGTERM) (rank 3 failed first)"),
        ("train.rank", "10.0.0.1 device 1 rank 1", "passed", None),
        ("train.rank", "10.0.0.2 device 1 rank 3", "failed", "exit 1"),
    ]
    assert float(suite.time) == pytest.approx(6.75)


def test_a_refused_preflight_fails_that_server_and_the_launch_and_a_job_stopped_from_outside_fails_its_ranks():
    hostvars = {"h1": {"_ascend_preflight": {"failed": True, "msg": "device 3 is held by pid 77 (python3)\nmore"}}, "h2": {}}
    _suite, cases = read_report(
        junit_report(["h1", "h2"], "train", hostvars=hostvars, refusal="clock of h2 is 40 s off", stage_failures=[])
    )
    assert [(c.classname, c.name, c.outcome, c.message) for c in cases] == [
        ("train.preflight", "h1", "failed", "device 3 is held by pid 77 (python3)"),
        ("train.launch", "job", "failed", "clock of h2 is 40 s off"),
    ]
    stopped = _summary(
        failure={"rank_id": -1, "stopped_by": "ascend.cluster.stop"}, attempts=[{"attempt": 1, "job_id": "j", "line": "FAILED: x"}]
    )
    _suite, cases = read_report(junit_report([], "train", summary=stopped))
    assert cases[0] == Case("train.attempt", "attempt 1 (j)", "failed", "FAILED: x", "FAILED: x")
    assert cases[1].outcome == "failed" and cases[1].message == "stopped by fail-fast (SIGTERM)"


def test_train_without_a_summary_says_what_is_known():
    def only(**kw):
        return read_report(junit_report(["h1", "h2"], "train", hostvars={}, **kw))[1]

    assert only(remaining=["h1"]) == [
        Case("train.launch", "job", "failed", *["the run failed on h2 before a job was watched (the play's output says why)"] * 2)
    ]
    assert only(remaining=["h1", "h2"], job_id="j1")[0].message.startswith("job j1 launched and not watched")
    assert only(remaining=["h1", "h2"])[0] == Case("train.launch", "job", "skipped", "no job was launched", None)


def test_prepare_per_stage_per_server_a_failed_stage_skips_the_rest_of_that_server():
    hostvars = {
        "h1": {
            "_ascend_facts_read": {"changed": False},
            "device_ip_result": {"changed": True},
            "_ascend_firewall_result": {"changed": False},
        },
        "h2": {"_ascend_facts_read": {"changed": False}, "device_ip_result": {"failed": True, "msg": "hccn_tool -i 3 -ip -s: exit 7"}},
        "h3": {"_ascend_facts_read": {"unreachable": True, "msg": "ssh: connect to host h3 port 22: No route to host"}},
    }
    health = {"problems": ["h1 device 3: link DOWN - check the optics", "h1 device 5: net_health Init"], "bad": []}
    _suite, cases = read_report(
        junit_report(["h1", "h2", "h3"], "prepare", hostvars=hostvars, net_health=health, rank_table_written=False, remaining=["h1"])
    )
    got = {(c.classname, c.name): (c.outcome, c.message) for c in cases}
    assert len(cases) == 15
    assert got[("prepare.device_ip", "h1")] == ("passed", None)
    assert got[("prepare.net_health", "h1")] == ("failed", "h1 device 3: link DOWN - check the optics (+1 more)")
    assert got[("prepare.device_ip", "h2")] == ("failed", "hccn_tool -i 3 -ip -s: exit 7")
    assert got[("prepare.firewall", "h2")] == ("skipped", "not run: the server failed at device_ip")
    assert got[("prepare.facts", "h3")] == ("failed", "ssh: connect to host h3 port 22: No route to host")
    assert got[("prepare.rank_table", "h1")] == ("skipped", "not written")


def test_the_servers_not_reached():
    hostvars = {"h2": {"_ascend_facts_read": {"unreachable": True, "msg": "timed out"}}}
    suite, cases = read_report(junit_report(["h1", "h2"], "reached", hostvars=hostvars, playbook="train", lost=["h2"]))
    assert suite.name == "ascend.cluster.train"
    assert cases == [Case("train.reached", "h1", "passed", None, None), Case("train.reached", "h2", "failed", "timed out", "timed out")]


def test_any_text_a_server_sends_leaves_a_document_ci_reads():
    hostile = 'rank 3: \x00\x1b[31mboom\x07 <tag attr="x"> & ]]> \ud800 \uffff \U0001f600' + "x" * 900
    rows = [{"stage": "rank", "server": "s<1>&", "device": 0, "rank": 0, "result": "FAIL", "detail": hostile}]
    _suite, [got] = read_report(junit_report({"rows": rows}, "smoke"))
    assert got.name == "s<1>& device 0 rank 0" and got.outcome == "failed"
    assert got.message is not None and got.text is not None
    assert got.message.startswith("rank 3: \ufffd\ufffd[31mboom\ufffd <tag attr=\"x\"> & ]]>") and len(got.message) == _junit.MESSAGE_CHARS
    assert got.text.endswith("x" * 900) and "\U0001f600" in got.text


def test_bad_input_is_refused_naming_it():
    with pytest.raises(AnsibleFilterError, match="junit_report: kind must be one of"):
        junit_report([], "lint")
    with pytest.raises(AnsibleFilterError, match="the smoke summary"):
        junit_report("nope", "smoke")
    with pytest.raises(ClusterSpecError, match="passed, failed or skipped"):
        _junit.case("a", "b", "broken")
