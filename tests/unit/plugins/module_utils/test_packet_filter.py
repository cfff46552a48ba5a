"""_packet_filter: what in the host's packet filter drops or rejects a job's ports, from recorded real outputs of
iptables-save (nf_tables and legacy) and nft -j list ruleset (packet_filter/README.md says how each was made)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._host import packet_filter as pf

RECORDED = Path(__file__).parent / "packet_filter"
PORTS = [22, 8118, 16666, 29500] + list(range(60000, 60016))


def recorded(name: str) -> str:
    return (RECORDED / name).read_text()


def texts(found: list) -> list:
    return [pf.finding_text(f) for f in found]


def test_the_issues_raw_drop_rule_through_iptables_nft_is_named_with_its_port():
    assert texts(pf.iptables_blocks(recorded("nft_raw_drop.iptables-save"), PORTS)) == [
        "iptables (nf_tables) INPUT: -A INPUT -p tcp -m tcp --dport 16666 -j DROP drops incoming TCP port 16666"
    ]


def test_the_same_rule_through_iptables_legacy_before_an_accept_of_the_hccl_range():
    assert texts(pf.iptables_blocks(recorded("legacy_raw_drop.iptables-save"), PORTS)) == [
        "iptables (legacy) INPUT: -A INPUT -p tcp -m tcp --dport 16666 -j DROP drops incoming TCP port 16666"
    ]


def test_a_default_deny_firewall_names_its_user_chains_rules_its_policy_and_the_outgoing_chain():
    assert texts(pf.iptables_blocks(recorded("nft_policy_drop.iptables-save"), PORTS)) == [
        # only from 10.0.0.0/8: named with its condition, and the policy behind it
        "iptables (nf_tables) INPUT: -A BLOCK -s 10.0.0.0/8 -p tcp -m tcp --dport 8118 -j DROP may drop incoming TCP port 8118",
        # lo and ESTABLISHED accept no new connection from another server: named, not trusted
        "iptables (nf_tables) INPUT policy DROP drops incoming TCP ports 8118, 16666 (no rule accepts them), "
        "unless one of: -A INPUT -i lo -j ACCEPT",
        "iptables (nf_tables) INPUT: -A BLOCK -p tcp -m multiport --dports 29500,60000:60015 -j REJECT --reject-with tcp-reset "
        "rejects incoming TCP ports 29500, 60000-60015",
        "iptables (nf_tables) OUTPUT: -A OUTPUT -p tcp -m tcp --dport 16666 -j REJECT --reject-with icmp-port-unreachable "
        "rejects outgoing TCP port 16666",
    ]


def test_ssh_accepted_before_the_policy_is_not_named():
    found = pf.iptables_blocks(recorded("nft_policy_drop.iptables-save"), [22])
    assert found == []


def test_native_nftables_sets_ranges_jumps_and_the_output_hook():
    assert texts(pf.nft_blocks(recorded("native.nft.json"), PORTS)) == [
        "nftables inet filter input: ip saddr 10.0.0.0/8 tcp dport { 8118, 29500 } drop (handle 11) may drop incoming TCP ports 8118, 29500",
        "nftables inet filter input: tcp dport 16666 drop (handle 5) drops incoming TCP port 16666",
        "nftables inet filter input: tcp dport @hccl reject with tcp reset (handle 9) rejects incoming TCP ports 60000-60015",
        "nftables inet filter output: tcp dport != 22 tcp dport 60000-60031 reject with icmpx (handle 13) rejects outgoing TCP ports 60000-60015",
    ]


def test_a_native_drop_policy_and_an_empty_ruleset():
    assert texts(pf.nft_blocks(recorded("native_policy_drop.nft.json"), [22, 16666])) == [
        "nftables inet fw input policy DROP drops incoming TCP port 16666 (no rule accepts it)"
    ]
    assert pf.nft_blocks(recorded("empty.nft.json"), PORTS) == []
    assert pf.nft_blocks("", PORTS) == []


def test_iptables_nft_tables_are_left_to_iptables_save_when_it_was_read():
    # nft shows iptables-nft's matches as opaque xt expressions: read whole, they are conditions
    opaque = texts(pf.nft_blocks(recorded("nft_policy_drop.nft.json"), [16666]))
    assert "nftables ip filter OUTPUT: tcp dport 16666 xt target REJECT (handle 10) rejects outgoing TCP port 16666" in opaque
    assert pf.nft_blocks(recorded("nft_raw_drop.nft.json"), PORTS, skip_iptables_tables=True) == []
    assert texts(pf.nft_blocks(recorded("nft_raw_drop.nft.json"), PORTS)) == [
        "nftables ip filter INPUT: tcp dport 16666 drop (handle 2) drops incoming TCP port 16666"
    ]


@pytest.mark.parametrize(
    ("line", "port", "match"),
    [
        ("-A INPUT -p udp -m udp --dport 16666 -j DROP", 16666, False),
        ("-A INPUT -p tcp -m tcp ! --dport 16666 -j DROP", 16666, False),
        ("-A INPUT -p tcp -m tcp ! --dport 16666 -j DROP", 60000, True),
        ("-A INPUT -p tcp -m tcp --dport 60000: -j DROP", 60031, True),
        ("-A INPUT -m conntrack --ctstate INVALID -j DROP", 16666, False),
        ("-A INPUT -m conntrack --ctstate NEW -p tcp -j DROP", 16666, True),
        ("-A INPUT -m state ! --state ESTABLISHED -j DROP", 16666, True),
        ("-A INPUT -p tcp --syn -j DROP", 16666, True),
        ("-A INPUT -i eth0 -p tcp -j DROP", 16666, None),
        ('-A INPUT -p tcp -m comment --comment "no hccl" -m tcp --dport 16666 -j DROP', 16666, True),
        ("[12:720] -A INPUT -p tcp -m tcp --dport 16666 -j DROP", 16666, True),
    ],
)
def test_one_iptables_rule_against_a_new_connection(line, port, match):
    _chain, rule = pf.iptables_rule(line)
    assert rule.matches(port) is match and rule.verdict == "drop"


def test_a_jump_to_a_target_that_is_no_chain_goes_on_and_a_goto_returns():
    text = "\n".join(
        [
            "*filter",
            ":INPUT ACCEPT [0:0]",
            ":SKIP - [0:0]",
            "-A INPUT -p tcp --dport 16666 -j LOG --log-prefix drop",
            "-A INPUT -p tcp -g SKIP",
            "-A INPUT -p tcp --dport 16666 -j DROP",
            "-A SKIP -p tcp --dport 60000 -j REJECT",
            "COMMIT",
        ]
    )
    # 16666: LOG goes on, the goto'd chain falls through and returns past INPUT's DROP
    assert texts(pf.iptables_blocks(text, [16666, 60000])) == [
        "iptables INPUT: -A SKIP -p tcp --dport 60000 -j REJECT rejects incoming TCP port 60000"
    ]


class Runner:
    """Answers commands from a table ``{program: (rc, out, err)}``; a program missing from it is not installed."""

    def __init__(self, answers: dict) -> None:
        self.answers = answers
        self.calls: list = []

    def __call__(self, argv, timeout=None, env=None):
        self.calls.append((argv, env))
        if argv[0] not in self.answers:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        return self.answers[argv[0]]


def test_read_takes_both_iptables_and_nft_and_counts_a_rule_once():
    runner = Runner(
        {
            "iptables-nft-save": (0, recorded("nft_raw_drop.iptables-save"), ""),
            "iptables-legacy-save": (0, "", ""),
            "nft": (0, recorded("nft_raw_drop.nft.json"), ""),
        }
    )
    found = pf.read([16666, 60000], runner)
    assert [argv for argv, _env in runner.calls] == [["iptables-nft-save"], ["iptables-legacy-save"], ["nft", "-j", "list", "ruleset"]]
    assert all(env == {"LC_ALL": "C"} for _argv, env in runner.calls)
    assert found["read"] == ["iptables-nft-save", "iptables-legacy-save", "nft"] and found["unread"] == []
    assert found["found"] == "iptables (nf_tables) INPUT: -A INPUT -p tcp -m tcp --dport 16666 -j DROP drops incoming TCP port 16666"
    assert [b["text"] for b in found["blocks"]] == [found["found"]]


def test_read_falls_back_to_iptables_save_and_names_a_tool_it_could_not_read():
    runner = Runner(
        {
            "iptables-save": (0, recorded("legacy_raw_drop.iptables-save"), ""),
            "nft": (1, "", "Error: Could not process rule: Operation not permitted\nlist ruleset\n"),
        }
    )
    found = pf.read([16666], runner)
    assert found["read"] == ["iptables-save"]
    assert found["unread"] == ["nft: Error: Could not process rule: Operation not permitted"]
    assert found["blocks"][0]["tool"] == "iptables (legacy)"


def test_read_with_nothing_installed_or_nothing_dropping():
    assert pf.read([16666], Runner({}))["found"] == "no packet filter read: neither iptables nor nft is installed"
    clean = Runner({"iptables-nft-save": (0, "", ""), "nft": (0, recorded("empty.nft.json"), "")})
    assert pf.read([16666, 60000, 60001], clean)["found"] == "iptables-nft-save, nft: nothing drops or rejects TCP 16666, 60000-60001"
