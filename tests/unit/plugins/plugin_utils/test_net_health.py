"""plugin_utils._net.net_health's summary: the servers a run went on without are named, never hidden (issue 25 item 1)."""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.filter.net_health import net_health_report


def host(name: str, index: int) -> dict:
    devices = [
        {"device_id": d, "device_ip": f"198.19.{d}.{index}", "netmask": "255.255.255.0", "link": "UP", "net_health": "Success"}
        for d in range(2)
    ]
    return {"inventory_hostname": name, "ansible_facts": {"ascend_npu": {"chip": "910B", "devices": devices}}}


def test_a_server_left_out_is_named_in_the_line_the_table_and_the_document_but_is_no_problem():
    report = net_health_report([host("h1", 1), host("h3", 3)], check_tls=False, left_out=["h2"])
    assert report["ok"] and report["problems"] == [] and report["left_out"] == ["h2"]
    assert report["line"] == "net_health: 4/4 devices OK on 2 server(s); not checked: h2 (left out of this run)"
    assert [row["server"] for row in report["rows"]] == ["h1", "h1", "h3", "h3"]  # rows are the devices read
    assert report["table"][1].split() == ["h2", "-", "-", "-", "-", "-", "-", "left", "out", "of", "this", "run"], report["table"]


def test_without_servers_left_out_nothing_changes():
    report = net_health_report([host("h1", 1), host("h3", 3)], check_tls=False)
    assert report["left_out"] == [] and report["line"] == "net_health: 4/4 devices OK on 2 server(s)"
    assert "left out" not in "\n".join(report["table"])
