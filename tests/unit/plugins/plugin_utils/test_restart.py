"""The restart policy (plugin_utils/_launch/restart): what restarts, what ends the job and why, and how attempts are reported."""

from __future__ import annotations

import time

from ansible_collections.ascend.cluster.plugins.filter.launch import restart_plan
from ansible_collections.ascend.cluster.plugins.plugin_utils._launch import restart


def failed(rank=3, outcome="exit 1", last="step 4 loss 250", job="j", started=(100.0, 100.1), ended=(105.0, 104.0)) -> dict:
    ranks = [
        {"rank_id": 3, "state": "failed", "started": started[0], "ended": ended[0]},
        {"rank_id": 0, "state": "stopped", "started": started[1], "ended": ended[1]},
    ]
    return {
        "job_id": job,
        "ok": False,
        "line": f"FAILED: train {job}: rank {rank} ...",
        "failure": {"rank_id": rank, "server": "10.0.0.1", "outcome": outcome},
        "message": f"rank {rank} failed first: {outcome}. Its log ends with:\n    step 1\n    {last}\n",
        "ranks": ranks,
    }


def test_a_rank_failure_restarts_on_the_same_servers_while_restarts_are_left():
    decision = restart.decide(failed(), {}, {}, [], max_restarts=2)
    assert decision["restart"] and decision["why"] == "restart 1 of 2: on the same servers"
    assert decision["signature"] == {"rank_id": 3, "cause": "exit 1", "last_line": "step 4 loss 250"}


def test_nothing_restarts_after_success_a_stop_by_a_person_or_the_last_restart():
    ok = dict(failed(), failure=None, ok=True)
    assert restart.decide(ok, {}, {}, [], 3) == {
        "restart": False,
        "at_fault": [],
        "signature": restart.signature(None, ok["message"]),
        "why": "the job succeeded",
    }
    stopped = dict(failed(), failure={"rank_id": -1, "stopped_by": "stopped by ascend.cluster.stop, run by alice"})
    assert (
        restart.decide(stopped, {}, {}, [], 3)["why"] == "stopped by a person (stopped by ascend.cluster.stop, run by alice): not restarted"
    )
    ctrl_c = restart.decide(failed(), {"interrupted": {"signal": 2}}, {}, [], 3)
    assert not ctrl_c["restart"] and "the controller was interrupted" in ctrl_c["why"]
    assert restart.decide(failed(), {}, {}, [], 0)["why"] == "no restart was allowed (max_restarts is 0)"
    assert restart.decide(failed(last="step 9"), {}, {}, [{"signature": {}}], 1)["why"] == "all 1 restart(s) were used"


def test_a_fault_on_a_server_ends_the_job_naming_it_when_its_servers_are_not_known():
    lost = restart.decide(failed(), {"lost_hosts": ["h2"]}, {}, [], 3)
    assert not lost["restart"] and lost["at_fault"] == [{"server": "h2", "why": "lost (stopped answering)"}]
    assert "the fault is on a server (h2: lost (stopped answering))" in lost["why"]
    diagnosis = {
        "seen": [
            {"kind": "clock", "server": "h1", "text": "h1 clock 3 s off"},  # not a fault of the server's hardware
            {"kind": "link", "server": "h3", "text": "h3 eth3 link DOWN - check the optics/cable"},
            {"kind": "leftover", "server": "h3", "text": "h3: pid 9 holds device 1"},  # the same server once
        ]
    }
    found = restart.decide(failed(), {}, diagnosis, [], 3)
    assert found["at_fault"] == [{"server": "h3", "why": "h3 eth3 link DOWN - check the optics/cable"}] and not found["restart"]


def test_the_same_failure_at_the_same_point_twice_is_a_crash_loop_but_one_that_got_further_is_not():
    before = [{"signature": restart.signature(failed()["failure"], failed()["message"])}]
    loop = restart.decide(failed(), {}, {}, before, 3)
    assert not loop["restart"] and loop["why"].startswith("not restarted: a crash loop - rank 3 failed again with the same cause (exit 1)")
    assert "its last line: step 4 loss 250" in loop["why"]
    assert restart.decide(failed(last="step 9 loss 111"), {}, {}, before, 3)["restart"]  # it got further: progress
    assert restart.decide(failed(rank=5), {}, {}, before, 3)["restart"]  # another rank
    assert restart.decide(failed(outcome="killed by SIGKILL"), {}, {}, before, 3)["restart"]  # another cause


def test_an_attempts_record_and_the_time_to_restart_in_the_summary():
    first = failed(job="j")
    entry = restart.record(0, "j", first, restart.decide(first, {}, {}, [], 2))
    assert entry["failed_at"] == 105.0 and entry["cause"] == "exit 1" and entry["restart_s"] is None
    second = {
        "job_id": "j-r1",
        "ok": True,
        "line": "train j-r1: 2/2 ranks done in 3 s",
        "failure": None,
        "message": "",
        "ranks": [{"rank_id": 0, "started": 110.0, "ended": 113.0}, {"rank_id": 3, "started": 110.5, "ended": 113.0}],
    }
    out = restart.summarised(second, [entry])
    assert out["attempts"][0]["restart_s"] == 5.5  # failure at 105.0 -> every rank started at 110.5
    assert out["line"] == "train j-r1: 2/2 ranks done in 3 s after 1 restart (j: rank 3 exit 1; 5.5 s to restart)"
    assert restart.summarised(second, []) == second  # a job that never restarted is summarised as before
    never = dict(second, ranks=[{"rank_id": 0, "started": None}])
    assert restart.summarised(never, [entry])["attempts"][0]["restart_s"] is None  # a rank that never started: no figure


def test_the_filter_ignores_an_earlier_attempts_diagnosis_and_returns_the_records_so_far():
    old = {"job_id": "j", "seen": [{"kind": "link", "server": "h3", "text": "h3 eth3 link DOWN"}]}
    plan = restart_plan(failed(job="j-r1"), diagnosis=old, attempts=[{"attempt": 0, "signature": {}}], max_restarts=3)
    assert plan["restart"] and plan["at_fault"] == []
    assert [a["attempt"] for a in plan["attempts"]] == [0, 1] and plan["record"]["job_id"] == "j-r1"


def server(host, devices=8, chip="910B", down=(), index=1) -> dict:
    """A server entry as servers_from_facts gives it: every device UP and healthy unless in ``down``."""
    return {
        "host": host,
        "server_id": f"10.0.0.{index}",
        "chip": chip,
        "devices": [
            {"device_id": d, "device_ip": f"10.1.{d}.{index}", "link": "DOWN" if d in down else "UP", "net_health": "Success"}
            for d in range(devices)
        ],
    }


H1, H2 = server("h1", index=1), server("h2", index=2)


def layout(spares=(), read=(), np=16, min_np=0, servers=(H1, H2), spares_read=False, hosts=("h1", "h2", "h3", "h4")) -> dict:
    return {
        "servers": list(servers),
        "np": np,
        "min_np": min_np,
        "spread": True,
        "play_hosts": list(hosts),
        "spares_group": list(spares),
        "spares": list(read),
        "spares_read": spares_read,
    }


def test_a_lost_server_is_left_out_and_a_spare_takes_its_place_with_the_same_np():
    asked = restart.decide(failed(), {"lost_hosts": ["h2"]}, {}, [], 2, layout(spares=["h3"]))
    # the spare's facts are read only now that one is needed: the launch reads them and asks again
    assert not asked["restart"] and asked["read_spares"] == ["h3"] and asked["left_out"] == ["h2"]
    plan = restart.decide(
        failed(), {"lost_hosts": ["h2"]}, {}, [], 2, layout(spares=["h3"], read=[server("h3", index=3)], spares_read=True)
    )
    assert plan["restart"] and plan["members"] == ["h1", "h3"] and plan["np"] == 16 and not plan["shrunk"]
    assert plan["left_out"] == ["h2"] and plan["taken_in"] == ["h3"] and plan["exclude"] == ["h2", "h4"]
    assert plan["why"] == "restart 1 of 2: h2 (lost (stopped answering)) left out, replaced by h3"


def test_the_diagnosis_names_a_server_by_its_address_and_the_servers_left_may_run_the_job_alone():
    diagnosis = {"seen": [{"kind": "link", "server": "10.0.0.2", "text": "10.0.0.2 eth3 link DOWN - check the optics/cable"}]}
    three = layout(servers=(H1, H2, server("h4", index=4)), np=16)  # h4 takes part with no ranks (np=16 on 3 x 8)
    plan = restart.decide(failed(), {}, diagnosis, [], 1, three)
    assert plan["restart"] and plan["left_out"] == ["h2"] and plan["members"] == ["h1", "h4"] and plan["taken_in"] == []
    assert plan["why"].endswith("left out; the servers left run np=16")


def test_a_spare_of_another_chip_unread_or_with_too_few_healthy_devices_is_not_taken():
    spares = ["h3", "h5", "h6"]
    read = [server("h3", chip="910A", index=3), server("h5", down=(0, 1), index=5)]  # h6 could not be read
    plan = restart.decide(failed(), {"lost_hosts": ["h2"]}, {}, [], 2, layout(spares=spares, read=read, spares_read=True))
    assert not plan["restart"] and plan["left_out"] == ["h2"]
    why = plan["why"]
    assert why.startswith("not restarted: the fault is on a server (h2: lost (stopped answering)) and no spare can take its place (")
    assert "h3: chip 910A, not 910B" in why and "h6: its NPUs could not be read" in why
    assert "h5: 2 device(s) left out (eth0 link DOWN; eth1 link DOWN)" in why and "h5: too few devices" in why
    assert "allow a smaller job with -e min_np=M (role: ascend_launch_min_np=M; np the servers left can run: 1, 2, 3, 4, 5, 6, 7, 8)" in why
    # a spare with enough healthy devices for 2 x 6? np=12 on h1 + h5's six healthy ones
    twelve = restart.decide(failed(), {"lost_hosts": ["h2"]}, {}, [], 2, layout(np=12, spares=spares, read=read, spares_read=True))
    assert twelve["restart"] and twelve["members"] == ["h1", "h5"] and twelve["taken_in"] == ["h5"]


def test_without_a_spare_min_np_allows_the_largest_legal_smaller_job():
    none = restart.decide(failed(), {"lost_hosts": ["h2"]}, {}, [], 2, layout())
    assert not none["restart"] and "(the inventory group ascend_spares has no server left to take in)" in none["why"]
    small = restart.decide(failed(), {"lost_hosts": ["h2"]}, {}, [], 2, layout(min_np=4))
    assert small["restart"] and small["np"] == 8 and small["shrunk"] and small["members"] == ["h1"]
    assert small["why"].endswith("no spare keeps np=16 (no server left in ascend_spares): the job runs smaller, np=8 (min_np=4)")
    too_big = restart.decide(failed(), {"lost_hosts": ["h2"]}, {}, [], 2, layout(min_np=9))
    assert not too_big["restart"] and "lower min_np (no np from 9 to 16 runs on the servers left)" in too_big["why"]
    # 910A: one server runs 1, 2, 4 or 8 devices - with one of h1's rings down the largest legal np is 4, not 7
    a1 = server("h1", chip="910A", index=1)
    a1 = dict(a1, devices=a1["devices"][:7])
    ring = restart.decide(failed(), {"lost_hosts": ["h2"]}, {}, [], 2, layout(servers=(a1, server("h2", chip="910A", index=2)), min_np=2))
    assert ring["np"] == 4 and ring["members"] == ["h1"]


def test_a_server_left_out_once_stays_out_and_a_spare_taken_in_once_is_a_member():
    before = [{"signature": {}, "left_out": ["h2"], "taken_in": ["h3"]}]
    h3 = server("h3", index=3)
    plan = restart.decide(
        failed(),
        {"lost_hosts": ["h3"]},
        {},
        before,
        3,
        layout(servers=(H1, h3), spares=["h2", "h3", "h5"], read=[server("h5", index=5)], spares_read=True),
    )
    assert plan["restart"] and plan["left_out"] == ["h3"] and plan["taken_in"] == ["h5"] and plan["members"] == ["h1", "h5"]


def test_the_summary_line_of_a_server_replaced_by_a_spare_and_the_step_it_resumed_from():
    first = failed(job="j")
    decision = restart.decide(
        first, {"lost_hosts": ["h2"]}, {}, [], 2, layout(spares=["h3"], read=[server("h3", index=3)], spares_read=True)
    )
    entry = restart.record(0, "j", first, decision, failed_at=1000.0)
    assert entry["left_out"] == ["h2"] and entry["taken_in"] == ["h3"] and entry["np"] == 16 and not entry["shrunk"]
    second = {
        "job_id": "j-r1",
        "ok": True,
        "line": "train j-r1: 16/16 ranks done in 812 s",
        "failure": None,
        "ranks": [{"rank_id": 0, "started": 1010.0}, {"rank_id": 8, "started": 1014.0}],
    }
    # rank 0's step, whatever the others said; a server that said nothing adds nothing
    out = restart.summarised(second, [entry], resumed=[{0: 9, 1: 9}, {}, {8: 6}])
    clock = time.strftime("%H:%M:%S", time.localtime(1000.0))
    assert out["line"] == f"train j-r1: 16/16 ranks done in 812 s after 1 restart (h2 lost at {clock}, replaced by h3; 14 s to restart)"
    assert out["attempts"][0]["resumed_step"] == 9 and out["attempts"][0]["restart_s"] == 14.0
    assert restart.summarised(second, [entry])["attempts"][0]["resumed_step"] is None  # the training said nothing
    small = restart.record(0, "j", first, restart.decide(first, {"lost_hosts": ["h2"]}, {}, [], 2, layout(min_np=8)), failed_at=1000.0)
    assert restart.summarised(second, [small])["line"].endswith(f"(h2 lost at {clock}, np now 8; 14 s to restart)")


def test_the_filter_takes_the_spares_as_host_variables_and_reads_their_facts():
    facts = {"ascend_npu": {"chip": "910B", "devices": server("h3", index=3)["devices"]}}
    spares = [{"inventory_hostname": "h3", "ansible_host": "10.0.0.3", "ansible_facts": facts}, {"inventory_hostname": "h5"}]
    plan = restart_plan(
        failed(),
        watch={"lost_hosts": ["h2"]},
        max_restarts=1,
        servers=[H1, H2],
        np="16",
        spares=spares,
        spares_read="true",
        play_hosts=["h1", "h2", "h3", "h5"],
    )
    assert plan["restart"] and plan["taken_in"] == ["h3"] and plan["exclude"] == ["h2", "h5"]
    assert plan["record"]["left_out"] == ["h2"] and plan["record"]["taken_in"] == ["h3"]


def test_a_spares_device_is_healthy_by_the_rule_that_puts_a_fault_on_a_server():
    h3 = server("h3", index=3)
    h3["devices"][1].update(net_health="Init")  # no netdetect address: nothing was probed, which says nothing
    h3["devices"][2].update(net_health="Init", netdetect="10.1.2.9")  # probed, not answered
    h3["devices"][3].update(net_health="Socket fail")
    h3["devices"][4].update(device_ip="")
    h3["devices"][5].update(error="hccn_tool timed out")
    usable, problems = restart.healthy(h3)
    assert [d["device_id"] for d in usable["devices"]] == [0, 1, 6, 7]
    assert problems == [
        "device 2 net_health Init",
        "device 3 net_health Socket fail",
        "device 4 has no device IP",
        "device 5 could not be read",
    ]
