# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's packet filter (iptables, nftables): which rules drop or reject a job's TCP ports.

ufw and firewalld are read by ``_host/firewall.py``; many clusters have neither but a packet filter of their own
(``iptables -I INPUT -p tcp --dport 16666 -j DROP``, an nftables ruleset). :func:`read` reads it as the kernel
holds it, in one call per tool, always with ``LC_ALL=C``:

- ``iptables-nft-save`` and ``iptables-legacy-save`` (each that is installed; else ``iptables-save``): the
  ``filter`` table's ``INPUT`` and ``OUTPUT`` chains, with the user chains they jump to;
- ``nft -j list ruleset``: every base chain of family ``ip`` or ``inet`` hooked at ``input`` or ``output``.
  The tables that iptables-nft writes (``ip filter`` and its siblings) are left to ``iptables-nft-save``
  when it was read: nft shows their matches as opaque ``xt`` expressions.

For each port it follows a new TCP connection (its first packet: ``ct state``/``--ctstate`` without ``new``
does not match it) through each chain, in order, into the chains it jumps to, and names what drops or
rejects it before anything accepts it: a rule, or the chain's policy at its end. A rule with conditions
this reading cannot decide (a source address, an interface, an opaque match) is named with them, as one
that may drop the port; one with such conditions that accepts does not stop the walk.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING

from ansible_collections.ascend.cluster.plugins.module_utils import _command
from ansible_collections.ascend.cluster.plugins.module_utils._host.port_ranges import format_ranges, merge_ranges

if TYPE_CHECKING:  # types only: nothing here runs, so the 3.8 floor does not apply
    from typing import Any, Callable, Iterable

    Runner = Callable[..., tuple[int, str, str]]

IPTABLES_SAVES = (["iptables-nft-save"], ["iptables-legacy-save"])
IPTABLES_SAVE = ["iptables-save"]  # read only when neither of the two above is installed
NFT_LIST = ["nft", "-j", "list", "ruleset"]
COMMAND_TIMEOUT = 30
C_LOCALE = {"LC_ALL": "C"}
# iptables chain -> the direction of the job's connections it sees
IPTABLES_CHAINS = (("INPUT", "incoming"), ("OUTPUT", "outgoing"))
NFT_HOOKS = {"input": "incoming", "output": "outgoing"}
NFT_FAMILIES = ("ip", "inet")
# The tables iptables-nft keeps in nftables (iptables-nft-save shows their rules whole).
IPTABLES_NFT_TABLES = ("filter", "mangle", "raw", "nat", "security")
TCP_NAMES = ("tcp", "6", "all", "0")

# how a verdict reads in a finding
VERBS = {"drop": "drops", "reject": "rejects"}


def _ranges_text(ports: Iterable[int]) -> str:
    """``[60000, 60001, 60002, 16666]`` -> ``16666, 60000-60002``."""
    return format_ranges(merge_ranges((port, port) for port in ports), sep=", ")


class Rule:
    """One rule, reduced to what decides a new TCP connection to a port.

    ``tcp``: True (matches TCP), False (never TCP), None (no protocol match); ``ports``: ``(ranges, negated)``
    of its destination-port match, or None; ``new``: False when its connection-state match leaves out new
    connections; ``conditions``: the parts this reading cannot decide, as text; ``verdict``: accept, drop,
    reject, jump, goto, return, or None (counts, logs, marks: the walk goes on); ``target``: the chain of a
    jump or goto; ``text``: the rule as its tool prints it.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.tcp: bool | None = None
        self.ports: tuple | None = None
        self.new = True
        self.conditions: list = []
        self.verdict: str | None = None
        self.target: str | None = None

    def matches(self, port: int) -> bool | None:
        """True: every new TCP connection to ``port`` matches; None: some may (conditions); False: none does."""
        if self.tcp is False or not self.new:
            return False
        if self.ports is not None:
            ranges, negated = self.ports
            inside = any(low <= port <= high for low, high in ranges)
            if inside == negated:
                return False
        return None if self.conditions else True


class Chain:
    def __init__(self, name: str, policy: str | None = None) -> None:
        self.name = name
        self.policy = policy  # accept/drop/reject for a built-in (base) chain, None for a user chain
        self.rules: list = []


def walk(chains: dict, name: str, port: int, seen: frozenset = frozenset()) -> tuple:
    """``(verdict, hits, maybe_accepts)`` of a new TCP connection to ``port`` through chain ``name``.

    ``verdict``: accept, drop or reject when a rule that surely matches decides, ``return`` when a rule returns,
    None when the chain ends; ``hits``: ``[(rule, verdict, conditional)]`` that drop or reject it, in order;
    ``maybe_accepts``: the rules that accept it only under conditions, passed on the way.
    """
    hits: list = []
    maybe: list = []
    for rule in chains[name].rules:
        match = rule.matches(port)
        if match is False:
            continue
        if rule.verdict in VERBS:
            hits.append((rule, rule.verdict, match is None))
            if match:
                return rule.verdict, hits, maybe
        elif rule.verdict == "accept":
            if match:
                return "accept", hits, maybe
            maybe.append(rule)
        elif rule.verdict in ("jump", "goto") and rule.target in chains and rule.target not in seen:
            verdict, sub_hits, sub_maybe = walk(chains, rule.target, port, seen | {name})
            # a jump under conditions may not happen: what the chain it jumps to decides is conditional too
            hits += [(r, v, c or match is None) for r, v, c in sub_hits]
            maybe += sub_maybe
            if match and verdict in ("accept", "drop", "reject"):
                return verdict, hits, maybe
            if match and rule.verdict == "goto":
                return "return", hits, maybe
        elif rule.verdict == "return" and match:
            return "return", hits, maybe
    return None, hits, maybe


def blocking(chains: dict, entry: str, ports: Iterable[int]) -> list:
    """What in base chain ``entry`` drops or rejects new TCP connections to ``ports``:
    ``[{"rule", "verdict", "ports", "conditional", "unless"}]``, one per rule (or the policy: ``rule`` None)."""
    found: dict = {}
    for port in sorted(set(int(p) for p in ports)):
        verdict, hits, maybe = walk(chains, entry, port)
        policy = chains[entry].policy
        if verdict in (None, "return") and policy in VERBS:
            hits = hits + [(None, policy, False)]
        for rule, how, conditional in hits:
            key = (rule.text if rule else None, how)
            entry_found = found.setdefault(key, {"rule": key[0], "verdict": how, "ports": [], "conditional": conditional, "unless": []})
            entry_found["ports"].append(port)
            if rule is None:
                entry_found["unless"] = sorted(set(entry_found["unless"]) | set(r.text for r in maybe))
    return list(found.values())


# -- iptables-save ------------------------------------------------------------------------------

# options of iptables-save's rule lines that take no value
_FLAGS = ("--syn", "-f", "--fragment")
# options that are no condition at all
_NEUTRAL = ("-m", "--match", "--comment", "-c", "--set-counters")


def _iptables_ports(value: str) -> list:
    """``16666``, ``60000:60015``, ``60000:``, ``29500,60000:60015`` -> ``[(low, high)]``."""
    ranges = []
    for part in value.split(","):
        low, sep, high = part.partition(":")
        ranges.append((int(low or 0), int(high or 65535) if sep else int(low)))
    return ranges


def iptables_rule(line: str) -> tuple:
    """``(chain, Rule)`` of one ``-A CHAIN ...`` line of iptables-save."""
    text = line.strip()
    words = shlex.split(text[text.index("-A") :] if text.startswith("[") else text)
    chain = words[1]
    rule = Rule(text)
    negate = False
    index = 2
    while index < len(words):
        word = words[index]
        value = words[index + 1] if index + 1 < len(words) else ""
        if word == "!":
            negate = True
            index += 1
            continue
        if word in ("-j", "--jump", "-g", "--goto"):
            rule.verdict = {"ACCEPT": "accept", "DROP": "drop", "REJECT": "reject", "RETURN": "return"}.get(value)
            if rule.verdict is None:  # a user chain; a jump to a name that is no chain (LOG, MARK) is undone later
                rule.verdict, rule.target = ("goto" if word in ("-g", "--goto") else "jump"), value
            break  # what follows are the target's options (--reject-with ...)
        if word in ("-p", "--protocol"):
            rule.tcp = (value.lower() in TCP_NAMES) != negate
        elif word in ("--dport", "--destination-port", "--dports", "--destination-ports"):
            rule.ports = (_iptables_ports(value), negate)
        elif word == "--ports":  # multiport: source or destination port
            if not negate:
                rule.conditions.append("--ports %s (source or destination)" % value)
                rule.ports = (_iptables_ports(value), False)
            else:
                rule.conditions.append("! --ports %s" % value)
        elif word in ("--ctstate", "--state"):
            rule.new = ("NEW" in value.upper().split(",")) != negate
        elif word in _FLAGS:
            if word == "--syn":
                rule.new = rule.new and not negate
            else:
                rule.conditions.append(("! " if negate else "") + word)
            index += 1
            negate = False
            continue
        elif word == "--tcp-flags":
            rule.conditions.append(
                "%s--tcp-flags %s %s" % ("! " if negate else "", value, words[index + 2] if index + 2 < len(words) else "")
            )
            index += 3
            negate = False
            continue
        elif word not in _NEUTRAL:
            rule.conditions.append("%s%s %s" % ("! " if negate else "", word, value))
        index += 2
        negate = False
    return chain, rule


def iptables_chains(text: str) -> tuple:
    """``(variant, chains)`` of iptables-save's ``filter`` table, chains by name: variant ``nf_tables`` when its header
    says so, else ``legacy`` (1.8's legacy build names none; before 1.8 there was no other), None without a header."""
    variant = None
    chains: dict = {}
    table = None
    for line in text.splitlines():
        if line.startswith("# Generated by iptables"):
            variant = "nf_tables" if "(nf_tables)" in line else "legacy" if "(legacy)" in line or " v1." in line else None
        elif line.startswith("*"):
            table = line[1:].strip()
        elif table != "filter":
            continue
        elif line.startswith(":"):
            name, policy = (line[1:].split() + ["-"])[:2]
            chains[name] = Chain(name, policy.lower() if policy != "-" else None)
        elif line.startswith(("-A ", "[")):
            chain, rule = iptables_rule(line)
            chains.setdefault(chain, Chain(chain)).rules.append(rule)
    # a jump to a name that is no chain is a target (LOG, MARK, ...): the walk goes on past it
    for chain in chains.values():
        for rule in chain.rules:
            if rule.verdict in ("jump", "goto") and rule.target not in chains:
                rule.verdict, rule.target = None, None
    return variant, chains


def iptables_blocks(text: str, ports: Iterable[int]) -> list:
    """What in iptables-save's output drops or rejects the ``ports``: ``[{"tool", "chain", "direction", "rule",
    "verdict", "ports", "conditional", "unless"}]``."""
    variant, chains = iptables_chains(text)
    tool = "iptables (%s)" % variant if variant else "iptables"
    out = []
    for name, direction in IPTABLES_CHAINS:
        if name in chains:
            out += [dict(found, tool=tool, chain=name, direction=direction) for found in blocking(chains, name, ports)]
    return out


# -- nft -j list ruleset ------------------------------------------------------------------------


def _nft_value(right: Any, sets: dict) -> Any:
    """A match's right side as ``[(low, high)]`` port ranges when it is one, else None."""
    if isinstance(right, bool):
        return None
    if isinstance(right, int):
        return [(right, right)]
    if isinstance(right, str) and right.startswith("@"):
        return _nft_value({"set": sets.get(right[1:], [])}, sets)
    if isinstance(right, dict) and "range" in right:
        low, high = right["range"]
        return [(int(low), int(high))] if isinstance(low, int) and isinstance(high, int) else None
    if isinstance(right, dict) and "set" in right:
        ranges: list = []
        for item in right["set"] or []:
            if isinstance(item, dict) and "elem" in item:
                item = item["elem"].get("val")
            got = _nft_value(item, sets)
            if got is None:
                return None
            ranges += got
        return ranges
    return None


def _nft_text(value: Any) -> str:
    """An nft JSON expression back in nft's own words, as far as a finding needs it."""
    if isinstance(value, dict):
        if "payload" in value:
            return "%s %s" % (value["payload"].get("protocol", "?"), value["payload"].get("field", "?"))
        if "meta" in value:
            return "meta %s" % value["meta"].get("key", "?")
        if "ct" in value:
            return "ct %s" % value["ct"].get("key", "?")
        if "range" in value:
            return "-".join(map(_nft_text, value["range"]))
        if "prefix" in value:
            return "%s/%s" % (value["prefix"].get("addr"), value["prefix"].get("len"))
        if "set" in value:
            return "{ %s }" % ", ".join(_nft_text(v) for v in value["set"] or [])
        if "elem" in value:
            return _nft_text(value["elem"].get("val"))
        if "xt" in value:
            return "xt %s %s" % (value["xt"].get("type", "?"), value["xt"].get("name", "?"))
        key = next(iter(value), "?")
        if key in ("accept", "drop", "return"):
            return key
        if key in ("jump", "goto"):
            return "%s %s" % (key, (value[key] or {}).get("target"))
        if key == "reject":
            return "reject" + (" with %s" % value[key]["type"] if isinstance(value[key], dict) and value[key].get("type") else "")
        return key
    if isinstance(value, list):
        return "{ %s }" % ", ".join(map(_nft_text, value))
    return str(value)


def nft_rule(item: dict, sets: dict) -> Rule:
    """A ``{"rule": ...}`` of ``nft -j`` as a :class:`Rule`; its text as nft prints it (roughly), with its handle."""
    words = []
    rule = Rule("")
    for expr in item.get("expr") or []:
        if not isinstance(expr, dict) or not expr:
            continue
        key = next(iter(expr))
        if key == "match":
            op, left, right = expr["match"].get("op", "=="), expr["match"].get("left"), expr["match"].get("right")
            shown = "%s%s %s" % (_nft_text(left), "" if op in ("==", "in") else " " + op, _nft_text(right))
            words.append(shown)
            negated = op == "!="
            payload = (left or {}).get("payload") if isinstance(left, dict) else None
            meta = (left or {}).get("meta") if isinstance(left, dict) else None
            ct = (left or {}).get("ct") if isinstance(left, dict) else None
            if payload and payload.get("field") == "dport" and payload.get("protocol") in ("tcp", "th"):
                ranges = _nft_value(right, sets)
                if ranges is None:
                    rule.conditions.append(shown)
                else:
                    rule.ports = (ranges, negated)
                rule.tcp = rule.tcp if payload["protocol"] == "th" else True
            elif payload and payload.get("protocol") in ("udp", "sctp", "dccp", "udplite", "icmp"):
                rule.tcp = False
            elif payload and payload.get("protocol") == "tcp":
                rule.tcp = True
                rule.conditions.append(shown)
            elif (meta and meta.get("key") == "l4proto") or (payload and payload.get("field") == "protocol"):
                names = right.get("set") if isinstance(right, dict) else right if isinstance(right, list) else [right]
                rule.tcp = any(str(n).lower() in TCP_NAMES for n in names or []) != negated
            elif ct and ct.get("key") == "state":
                states = right if isinstance(right, list) else [right]
                rule.new = ("new" in [str(s) for s in states]) != negated
            else:
                rule.conditions.append(shown)
        elif key in ("accept", "drop", "reject", "return", "jump", "goto"):
            words.append(_nft_text(expr))
            rule.verdict = key
            rule.target = (expr[key] or {}).get("target") if key in ("jump", "goto") else None
        elif key == "xt":
            words.append(_nft_text(expr))
            xt = expr["xt"] or {}
            if xt.get("type") == "target":
                rule.verdict = {"REJECT": "reject", "DROP": "drop", "ACCEPT": "accept"}.get(str(xt.get("name")).upper())
            else:
                rule.conditions.append(_nft_text(expr))
        elif key == "limit":
            words.append("limit")
            rule.conditions.append("limit")
        elif key not in ("counter", "log", "comment"):
            words.append(key)
    rule.text = "%s (handle %s)" % (" ".join(words), item.get("handle"))
    return rule


def nft_blocks(data: Any, ports: Iterable[int], skip_iptables_tables: bool = False) -> list:
    """What in ``nft -j list ruleset``'s output (text or parsed) drops or rejects the ``ports``, as
    :func:`iptables_blocks` says it (``chain`` reads ``inet filter input``). ``skip_iptables_tables``: leave out the
    tables iptables-nft keeps (its rules were read whole from iptables-nft-save)."""
    if isinstance(data, str):
        data = json.loads(data) if data.strip() else {}
    items = (data or {}).get("nftables") or []
    tables: dict = {}  # (family, table) -> {"chains": {name: Chain}, "sets": {name: elements}}
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = next(iter(item), None)
        body = item.get(kind) or {}
        if kind not in ("chain", "set", "rule") or body.get("family") not in NFT_FAMILIES:
            continue
        table = tables.setdefault((body["family"], body.get("table")), {"chains": {}, "sets": {}, "hooks": {}})
        if kind == "set":
            table["sets"][body.get("name")] = body.get("elem") or []
        elif kind == "chain":
            table["chains"][body.get("name")] = Chain(str(body.get("name")), body.get("policy") if body.get("hook") else None)
            if body.get("hook") in NFT_HOOKS and body.get("type", "filter") == "filter":
                table["hooks"][body.get("name")] = NFT_HOOKS[body["hook"]]
        else:
            table.setdefault("rules", []).append(body)
    out = []
    for (family, name), table in sorted(tables.items()):
        if skip_iptables_tables and family == "ip" and name in IPTABLES_NFT_TABLES:
            continue
        for body in table.get("rules", []):
            chain = table["chains"].setdefault(body.get("chain"), Chain(str(body.get("chain"))))
            chain.rules.append(nft_rule(body, table["sets"]))
        for chain_name, direction in sorted(table["hooks"].items()):
            out += [
                dict(found, tool="nftables", chain="%s %s %s" % (family, name, chain_name), direction=direction)
                for found in blocking(table["chains"], chain_name, ports)
            ]
    return out


# -- reading it ---------------------------------------------------------------------------------


def finding_text(found: dict) -> str:
    """One finding in words: ``iptables (nf_tables) INPUT: -A INPUT -p tcp -m tcp --dport 16666 -j DROP drops
    incoming TCP port 16666``."""
    ports = _ranges_text(found["ports"])
    noun = "port" if len(found["ports"]) == 1 else "ports"
    if found["rule"] is None:
        text = "%s %s policy %s %s incoming TCP %s %s" % (
            found["tool"],
            found["chain"],
            found["verdict"].upper(),
            VERBS[found["verdict"]],
            noun,
            ports,
        )
        text = text.replace("incoming", found["direction"])
        text += " (no rule accepts %s)" % ("it" if len(found["ports"]) == 1 else "them")
        if found.get("unless"):
            text += ", unless one of: %s" % "; ".join(found["unless"])
        return text
    return "%s %s: %s %s%s %s TCP %s %s" % (
        found["tool"],
        found["chain"],
        found["rule"],
        "may " if found["conditional"] else "",
        VERBS[found["verdict"]][:-1] if found["conditional"] else VERBS[found["verdict"]],
        found["direction"],
        noun,
        ports,
    )


def read(ports: Iterable[int], runner: Runner | None = None) -> dict:
    """The host's packet filter against ``ports``: ``{"blocks": [finding + "text"], "read": [tools read],
    "unread": [why a tool could not be read], "found": one line}``. A tool that is not installed is left out
    silently; one that fails (no root: ``Permission denied``) is named in ``unread``."""
    run = runner or _command.run
    ports = sorted(set(int(p) for p in ports))
    blocks: list = []
    tools_read: list = []
    unread: list = []

    def call(argv: list) -> str | None:
        try:
            rc, out, err = run(argv, timeout=COMMAND_TIMEOUT, env=C_LOCALE)
        except FileNotFoundError:
            return None
        except OSError as exc:
            unread.append("%s: %s" % (argv[0], exc.strerror or exc))
            return None
        if rc != 0:
            unread.append("%s: %s" % (argv[0], (err.strip() or out.strip() or "rc %d" % rc).splitlines()[0]))
            return None
        return out

    nf_tables_read = False
    outputs = [(argv, call(argv)) for argv in IPTABLES_SAVES]
    if all(out is None for _argv, out in outputs) and not unread:
        outputs = [(IPTABLES_SAVE, call(IPTABLES_SAVE))]
    for argv, out in outputs:
        if out is None:
            continue
        variant, _chains = iptables_chains(out)
        nf_tables_read = nf_tables_read or variant == "nf_tables" or argv[0] == "iptables-nft-save"
        tools_read.append(argv[0])
        blocks += iptables_blocks(out, ports)
    out = call(NFT_LIST)
    if out is not None:
        try:
            blocks += nft_blocks(out, ports, skip_iptables_tables=nf_tables_read)
            tools_read.append("nft")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            unread.append("nft: cannot read its JSON (%s)" % exc)
    for found in blocks:
        found["text"] = finding_text(found)
    if blocks:
        line = "; ".join(found["text"] for found in blocks)
    elif tools_read:
        line = "%s: nothing drops or rejects TCP %s" % (", ".join(tools_read), _ranges_text(ports))
    else:
        line = "no packet filter read" + (" (%s)" % "; ".join(unread) if unread else ": neither iptables nor nft is installed")
    return {"blocks": blocks, "read": tools_read, "unread": unread, "found": line}
