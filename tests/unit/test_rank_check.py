"""The smoke run's per-rank check (roles/smoke_check/files/ascend_rank_check.py): every check, passing and failing.

The script runs on the servers with their python3 and the standard library only, so it is loaded
here from its file, as the servers run it.
"""

from __future__ import annotations

import importlib.util
import io
import json

import pytest

from tests.helpers.collection import REPO_ROOT

SCRIPT = REPO_ROOT / "roles" / "smoke_check" / "files" / "ascend_rank_check.py"
_spec = importlib.util.spec_from_file_location("ascend_rank_check", SCRIPT)
assert _spec is not None and _spec.loader is not None
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)

HERE, THERE = "127.0.1.1", "127.0.1.2"


def table_v1(servers=((HERE, (0, 1)), (THERE, (0, 1))), status="completed", **extra):
    """A 1.0 table: ranks numbered in server order."""
    rank = 0
    server_list = []
    for server_id, devices in servers:
        entries = []
        for device in devices:
            entries.append({"device_id": str(device), "device_ip": f"198.19.{rank}.1", "rank_id": str(rank)})
            rank += 1
        server_list.append({"server_id": server_id, "host_nic_ip": "reserve", "device": entries})
    table = {"version": "1.0", "server_count": str(len(server_list)), "status": status, "server_list": server_list}
    table.update(extra)
    return table


def table_template2():
    return {
        "status": "completed",
        "group_count": "1",
        "group_list": [
            {
                "group_name": "",
                "instance_count": "2",
                "instance_list": [
                    {"devices": [{"device_id": "4", "device_ip": "198.19.0.5"}], "rank_id": "0", "server_id": HERE},
                    {"devices": [{"device_id": "5", "device_ip": "198.19.0.6"}], "rank_id": "1", "server_id": HERE},
                ],
            }
        ],
    }


@pytest.fixture
def write(tmp_path):
    def _write(table, name="rank_table.json"):
        path = tmp_path / name
        path.write_text(table if isinstance(table, str) else json.dumps(table))
        return str(path)

    return _write


def env_for(path, rank=1, device=1, size=4, **extra):
    """A correct mindspore environment for rank 1 (device 1 of 127.0.1.1, two devices there)."""
    env = {"RANK_TABLE_FILE": path, "RANK_ID": str(rank), "RANK_SIZE": str(size), "DEVICE_ID": str(device), "DEVICE_NUM": "2"}
    env.update({k: str(v) for k, v in extra.items()})
    return {k: v for k, v in env.items() if v != "None"}


def pytorch_env(path, **extra):
    values = {"RANK": 1, "WORLD_SIZE": 4, "MASTER_ADDR": HERE, "LOCAL_RANK": 1}
    values.update(extra)
    return env_for(path, **values)


def results(env, framework="mindspore", local=(HERE,)):
    found = rc.run_checks(env, framework, is_local=lambda address: (address in local, "Cannot assign requested address"))
    return {name: (status, detail) for status, name, detail in found}


def failed(found):
    return {name: detail for name, (status, detail) in found.items() if status == rc.FAIL}


def test_a_correct_rank_passes_every_check(write):
    found = results(env_for(write(table_v1())))
    assert list(found) == ["rank_table", "rank_size", "rank_id", "device_id", "server_id", "device_ip", "device_num"]
    assert {status for status, _detail in found.values()} == {rc.PASS}
    assert found["rank_table"][1].endswith("4 ranks on 2 server(s)")
    assert found["rank_id"][1] == "RANK_ID=1: server 127.0.1.1 device 1"


def test_a_correct_pytorch_rank_passes_the_pytorch_checks_too(write):
    found = results(pytorch_env(write(table_v1())), framework="pytorch")
    assert list(found)[-4:] == ["rank", "world_size", "master_addr", "local_rank"]
    assert failed(found) == {}


def test_template2_and_mindspore_legacy_read_the_old_variable(write):
    path = write(table_template2())
    env = {
        "MINDSPORE_HCCL_CONFIG_PATH": path,
        "RANK_TABLE_FILE": "/nonexistent",
        "RANK_ID": "1",
        "RANK_SIZE": "2",
        "DEVICE_ID": "5",
        "DEVICE_NUM": "2",
    }
    found = results(env, framework="mindspore_legacy")
    assert failed(found) == {}
    assert found["rank_table"][1].startswith(f"MINDSPORE_HCCL_CONFIG_PATH={path}")
    assert failed(results(env)) == {
        "rank_table": "RANK_TABLE_FILE=/nonexistent: cannot read /nonexistent: [Errno 2] No such file or directory: '/nonexistent'"
    }


@pytest.mark.parametrize(
    "table, message",
    [
        ("{not json", "cannot read"),
        ("[1, 2]", "is not a JSON object"),
        (table_v1(status="initializing"), "status is 'initializing', HCCL waits for 'completed'"),
        (table_v1(server_count="3"), "server_count 3 but 2 entries in server_list"),
        ({"status": "completed", "server_list": []}, "server_list is missing or empty"),
        ({"status": "completed", "server_list": [{"server_id": HERE}]}, "a server_list entry has no device list"),
        ({"status": "completed", "group_list": []}, "group_list has no instances"),
        (
            {"status": "completed", "server_list": [{"server_id": HERE, "device": [{"device_id": "x", "rank_id": "0"}]}]},
            "malformed device entry",
        ),
        ({"status": "completed", "server_list": [{"device": [{"device_id": "0", "rank_id": "0"}]}]}, "rank 0 has no server_id"),
        (
            table_v1(servers=((HERE, (0, 1)),))
            | {"server_list": [{"server_id": HERE, "device": [{"device_id": "0", "rank_id": "0"}, {"device_id": "1", "rank_id": "0"}]}]},
            "rank ids [0, 0] are not 0..1 once each",
        ),
    ],
)
def test_a_table_hccl_would_refuse_fails_and_the_rest_is_skipped(write, table, message):
    found = results(env_for(write(table)))
    assert found["rank_table"][0] == rc.FAIL
    assert message in found["rank_table"][1]
    assert set(failed(found)) == {"rank_table"}
    assert found["rank_size"] == (rc.SKIP, "needs rank_table")
    assert found["device_id"] == (rc.SKIP, "needs rank_id")


def test_no_table_variable(write):
    env = env_for(write(table_v1()))
    del env["RANK_TABLE_FILE"]
    assert failed(results(env))["rank_table"] == "RANK_TABLE_FILE is not set"
    assert failed(results(env, framework="mindspore_legacy"))["rank_table"] == "MINDSPORE_HCCL_CONFIG_PATH is not set"


@pytest.mark.parametrize(
    "override, check, detail",
    [
        ({"size": 3}, "rank_size", "RANK_SIZE=3, 4 ranks in the table"),
        ({"size": "four"}, "rank_size", "RANK_SIZE=four, 4 ranks in the table"),
        ({"rank": 9}, "rank_id", "RANK_ID=9: no such rank in the table"),
        ({"device": 0}, "device_id", "table device 1, DEVICE_ID=0"),
        ({"device": None}, "device_id", "table device 1, DEVICE_ID=None"),
        ({"ASCEND_DEVICE_ID": 3}, "device_id", "table device 1, DEVICE_ID=1, ASCEND_DEVICE_ID=3"),
        ({"DEVICE_NUM": 8}, "device_num", "DEVICE_NUM=8, 2 devices of this server in the table"),
    ],
)
def test_each_environment_mismatch_names_its_check(write, override, check, detail):
    found = results(env_for(write(table_v1()), **override))
    assert failed(found) == {check: detail}


def test_an_unknown_rank_skips_the_checks_of_its_entry(write):
    found = results(env_for(write(table_v1()), rank=9))
    assert set(failed(found)) == {"rank_id"}
    assert {found[n] for n in ("device_id", "server_id", "device_ip", "device_num")} == {(rc.SKIP, "needs rank_id")}


def test_device_num_is_only_checked_when_set(write):
    found = results(env_for(write(table_v1()), DEVICE_NUM=None))
    assert "device_num" not in found and failed(found) == {}


def test_a_server_of_another_machine_fails(write):
    found = results(env_for(write(table_v1())), local=(THERE,))
    assert failed(found) == {"server_id": "server 127.0.1.1 is not an address of this machine (Cannot assign requested address)"}


def test_local_address_binds_for_real():
    assert rc.local_address("127.0.0.1") == (True, "")
    ok, why = rc.local_address("198.18.255.254")  # benchmarking range: never on this machine's interfaces
    assert not ok and why


def test_device_ip_is_needed_with_two_servers_only(write):
    two = table_v1()
    two["server_list"][0]["device"][1]["device_ip"] = ""
    assert failed(results(env_for(write(two, "two.json")))) == {"device_ip": "device_ip missing (2 servers: HCCL needs it)"}
    one = table_v1(servers=((HERE, (0, 1)),))
    one["server_list"][0]["device"][1]["device_ip"] = ""
    found = results(env_for(write(one, "one.json"), size=2))
    assert failed(found) == {} and found["device_ip"] == (rc.PASS, "device_ip missing (1 servers)")


@pytest.mark.parametrize(
    "override, check, detail",
    [
        ({"RANK": 2}, "rank", "RANK=2, RANK_ID=1"),
        ({"RANK": None}, "rank", "RANK=None, RANK_ID=1"),
        ({"WORLD_SIZE": 8}, "world_size", "WORLD_SIZE=8, RANK_SIZE=4"),
        ({"MASTER_ADDR": THERE}, "master_addr", "MASTER_ADDR=127.0.1.2, rank 0's server is 127.0.1.1"),
        ({"LOCAL_RANK": 0}, "local_rank", "LOCAL_RANK=0, the table makes this rank number 1 of its server"),
        ({"LOCAL_RANK": None}, "local_rank", "LOCAL_RANK=None, the table makes this rank number 1 of its server"),
    ],
)
def test_each_pytorch_mismatch_names_its_check(write, override, check, detail):
    assert failed(results(pytorch_env(write(table_v1()), **override), framework="pytorch")) == {check: detail}


def test_local_rank_counts_within_the_server(write):
    env = pytorch_env(write(table_v1()), rank=3, RANK=3, LOCAL_RANK=1, DEVICE_NUM=2)
    assert failed(results(env, framework="pytorch", local=(THERE,))) == {}


def run_main(argv, env):
    out = io.StringIO()
    code = rc.main(argv, env=env, out=out)
    return code, out.getvalue().splitlines()


def test_main_prints_a_line_per_check_and_the_verdict(write):
    code, lines = run_main([], env_for(write(table_v1()), device=0))
    assert code == 1
    assert lines[3].split()[:2] == ["FAIL", "device_id"]
    assert len(lines) == 8
    name, payload = lines[-1].split(" ", 1)
    assert name == rc.VERDICT
    verdict = json.loads(payload)
    assert verdict["ok"] is False and verdict["rank_id"] == "1"
    assert verdict["failed"] == [{"check": "device_id", "detail": "table device 1, DEVICE_ID=0"}]


def test_report_only_exits_zero_with_the_failure_in_the_verdict(write):
    code, lines = run_main(["--report-only"], env_for(write(table_v1()), device=0))
    assert code == 0
    assert json.loads(lines[-1].split(" ", 1)[1])["ok"] is False


def test_main_passes_with_exit_zero(write):
    env = pytorch_env(write(table_v1()))
    env["RANK_TABLE_FILE"] = write(table_v1(servers=(("127.0.0.1", (0, 1)), ("127.0.0.2", (0, 1)))), "local.json")
    env["MASTER_ADDR"] = "127.0.0.1"
    code, lines = run_main(["--framework", "pytorch"], env)
    assert code == 0, lines
    assert json.loads(lines[-1].split(" ", 1)[1]) == {"device_id": "1", "failed": [], "ok": True, "passed": 11, "rank_id": "1"}


def test_an_unknown_framework_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        rc.main(["--framework", "jax"], env={}, out=io.StringIO())
    assert exc.value.code == 2
    assert "argument --framework: invalid choice: 'jax'" in capsys.readouterr().err
