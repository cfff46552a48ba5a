"""Bed names, addresses and generated files (pure, no root needed, no testbed marker)."""

from __future__ import annotations

import ipaddress
import shlex
from pathlib import Path

import pytest
import yaml

from tests.helpers.ansible_cli import MODULE_CODE_CACHE
from tests.testbed.bedlib import files
from tests.testbed.bedlib.layout import GUARD_NET, IFNAMSIZ, Layout, LayoutError

BIGGEST = Layout("abcdefgh", hosts=8, devices=16, chip="A3", mgmt_index=255)
REPO = Path("/src/checkout")


def test_interface_names_fit_the_kernel_limit() -> None:
    names = BIGGEST.interface_names()
    assert max(len(n) for n in names) <= IFNAMSIZ, [n for n in names if len(n) > IFNAMSIZ]
    root_links = [BIGGEST.mgmt_bridge] + [BIGGEST.mgmt_veth(h) for h in BIGGEST.host_names]
    assert all(n.startswith("abcdefgh-") for n in root_links), "root-namespace links must carry the prefix"


def test_every_address_is_inside_the_guarded_range() -> None:
    addresses = [BIGGEST.mgmt_gateway] + [BIGGEST.mgmt_ip(h) for h in BIGGEST.host_names]
    addresses += [BIGGEST.device_ip(h, d) for h in BIGGEST.host_names for d in range(BIGGEST.devices)]
    assert all(a in GUARD_NET for a in addresses)
    assert len(set(addresses)) == len(addresses), "addresses collide"


def test_management_addresses_follow_the_plan() -> None:
    layout = Layout("ab12cd", hosts=3, mgmt_index=4)
    assert str(layout.mgmt_gateway) == "198.18.4.1"
    assert [str(layout.mgmt_ip(h)) for h in layout.host_names] == ["198.18.4.11", "198.18.4.12", "198.18.4.13"]
    assert str(layout.device_ip("h2", 7)) == "198.19.7.2"
    assert layout.host_netns("h2") == "ab12cd-h2" and layout.fabric_netns == "ab12cd-fab"
    assert layout.state_dir == Path("/var/tmp/ascend-bed-ab12cd")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prefix": "ab", "hosts": 1}, "a bed has 2 to 16 hosts"),
        ({"prefix": "ab", "hosts": 17}, "a bed has 2 to 16 hosts"),
        ({"prefix": "a", "hosts": 2}, "bad prefix 'a'"),
        ({"prefix": "abcdefghi", "hosts": 2}, "bad prefix"),
        ({"prefix": "Ab12", "hosts": 2}, "bad prefix"),
        ({"prefix": "ab-1", "hosts": 2}, "bad prefix"),
        ({"prefix": "ab", "hosts": 2, "devices": 0}, "1 to 16 NPUs"),
        ({"prefix": "ab", "hosts": 2, "chip": "910C"}, "choose one of 910A, 910B, A3"),
        ({"prefix": "ab", "hosts": 2, "mgmt_index": 256}, "outside 0..255"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(LayoutError, match=message.replace("(", r"\(")):
        Layout(**kwargs)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda lay: lay.check_host("h4"), "has hosts h1..h3, not h4"),
        (lambda lay: lay.check_host("host1"), "hosts are named h1, h2"),
        (lambda lay: lay.check_device(8), "devices 0..7"),
        (lambda lay: lay.check_device(-1), "devices 0..7"),
    ],
)
def test_bad_host_or_device_is_refused(call, message: str) -> None:
    with pytest.raises(LayoutError, match=message):
        call(Layout("ab12cd", hosts=3))


def test_inventory_is_valid_yaml_with_what_ansible_needs() -> None:
    layout = Layout("ab12cd", hosts=3, mgmt_index=2)
    inv = yaml.safe_load(files.inventory(layout))
    group = inv["ascend"]
    assert {h: v["ansible_host"] for h, v in group["hosts"].items()} == {"h1": "198.18.2.11", "h2": "198.18.2.12", "h3": "198.18.2.13"}
    v = group["vars"]
    assert v["ansible_user"] == "root" and v["ansible_python_interpreter"] == "/usr/bin/python3"
    assert v["ansible_ssh_private_key_file"] == "/var/tmp/ascend-bed-ab12cd/id_ed25519"
    assert "UserKnownHostsFile=/var/tmp/ascend-bed-ab12cd/known_hosts" in v["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in v["ansible_ssh_common_args"]
    assert v["ansible_ssh_pipelining"] is True
    assert v["ansible_control_path_dir"] == "/var/tmp/ascend-bed-ab12cd/cp"


@pytest.mark.parametrize(
    "offset, setenv",
    [
        (0, None),
        (
            -30,
            "SetEnv LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 FAKETIME=-30"
            ' "FAKETIME_SHARED=/ascend-bed-ab12cd-h2-faketime-sem /ascend-bed-ab12cd-h2-faketime-shm"',
        ),
        (
            90,
            "SetEnv LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 FAKETIME=+90"
            ' "FAKETIME_SHARED=/ascend-bed-ab12cd-h2-faketime-sem /ascend-bed-ab12cd-h2-faketime-shm"',
        ),
    ],
)
def test_a_shifted_clock_is_set_for_every_session_only(offset: int, setenv: str | None) -> None:
    layout = Layout("ab12cd", hosts=2)
    lines = files.sshd_config(layout, "h2", offset).splitlines()
    assert [line for line in lines if line.startswith("SetEnv")] == ([setenv] if setenv else [])
    # sshd reads the quoted argument as one, as shlex does
    expected = dict(kv.split("=", 1) for kv in shlex.split(setenv)[1:]) if setenv else {}
    assert files.faketime_env(offset, files.faketime_shared(layout, "h2")) == expected


def test_a_named_code_cache_reaches_every_session_beside_the_shifted_clock() -> None:
    lines = files.sshd_config(Layout("ab12cd", hosts=2), "h2", -30, "/c/cache").splitlines()
    (setenv,) = [line for line in lines if line.startswith("SetEnv")]
    env = dict(kv.split("=", 1) for kv in shlex.split(setenv)[1:])
    assert env == {
        **files.faketime_env(-30, files.faketime_shared(Layout("ab12cd", hosts=2), "h2")),
        "PYTHONPATH": str(MODULE_CODE_CACHE),
        "ASCEND_MODULE_CODE_CACHE": "/c/cache",
    }


def test_sshd_config_is_key_only_on_the_management_address() -> None:
    text = files.sshd_config(Layout("ab12cd", hosts=2), "h2")
    lines = set(text.splitlines())
    for wanted in (
        "ListenAddress 198.18.0.12:22",
        "UsePAM no",
        "PasswordAuthentication no",
        "PermitRootLogin prohibit-password",
        "KbdInteractiveAuthentication no",
        "HostKey /var/tmp/ascend-bed-ab12cd/h2/ssh_host_ed25519_key",
    ):
        assert wanted in lines, wanted


def test_resolv_conf_has_no_nameserver_and_hosts_lists_the_bed() -> None:
    layout = Layout("ab12cd", hosts=2)
    assert "nameserver" not in [line.split()[0] for line in files.resolv_conf(layout).splitlines() if line and line[0] != "#"]
    entries = [line.split() for line in files.etc_hosts(layout).splitlines() if line and line[0] != "#"]
    assert entries == [["127.0.0.1", "localhost"], ["198.18.0.11", "h1"], ["198.18.0.12", "h2"]]


def test_start_script_isolates_the_host_and_uses_this_checkout() -> None:
    script = files.start_script(Layout("ab12cd", hosts=2), "h1", REPO, with_sim=True)
    assert "lowerdir=/etc,upperdir=/var/tmp/ascend-bed-ab12cd/h1/etc.upper" in script
    assert "mount --bind /var/tmp/ascend-bed-ab12cd/h1/root /root" in script
    assert "ascend-bed-run /run" in script and "mkdir -m 0755 /run/sshd" in script and "ascend-bed-tmp /tmp" in script
    assert f"/usr/bin/python3 {REPO}/simulator/bin/ascend-sim init --state /etc/ascend-sim --mode bed" in script
    assert "--host-id h1" in script and "/work/main" not in script
    assert script.rstrip().splitlines()[-1] == "exec /usr/sbin/sshd -D -e -f /var/tmp/ascend-bed-ab12cd/h1/sshd_config"
    bare = files.start_script(Layout("ab12cd", hosts=2), "h1", REPO, with_sim=False)
    assert "ascend-sim" not in bare


def test_known_hosts_pins_each_host_key_to_its_address() -> None:
    layout = Layout("ab12cd", hosts=2)
    keys = {"h1": "ssh-ed25519 AAAA1 ab12cd-h1", "h2": "ssh-ed25519 AAAA2 ab12cd-h2"}
    assert files.known_hosts(layout, keys) == "198.18.0.11 ssh-ed25519 AAAA1\n198.18.0.12 ssh-ed25519 AAAA2\n"


def test_device_plan_gives_each_device_index_its_own_subnet() -> None:
    layout = Layout("ab12cd", hosts=2)
    nets = {ipaddress.ip_network(f"{layout.device_ip('h1', d)}/24", strict=False) for d in range(8)}
    assert len(nets) == 8


def test_start_script_keeps_a_checkout_under_tmp_or_root_visible() -> None:
    # CI may clone under /tmp or /root, which the host gets privately: the checkout is held
    # before those mounts and mounted back at the same path when they hid it.
    repo = Path("/tmp/ci-clone/repo")
    lines = files.start_script(Layout("ab12cd", hosts=2), "h1", repo, with_sim=True).splitlines()
    hold = "/var/tmp/ascend-bed-ab12cd/h1/repo.hold"
    held = lines.index(f"mount --bind {repo} {hold}")
    private_tmp = next(i for i, line in enumerate(lines) if "ascend-bed-tmp /tmp" in line)
    back = lines.index(f"[ -e {repo}/simulator ] || {{ mkdir -p {repo} && mount --bind {hold} {repo}; }}")
    first_sim = next(i for i, line in enumerate(lines) if "ascend-sim" in line)
    assert held < private_tmp < back < first_sim
