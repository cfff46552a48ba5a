# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JUnit XML reports for CI (``-e junit=PATH`` of ``smoke``, ``prepare`` and ``train``): the one place the XML is built.

One ``<testcase>`` per check per server (per rank for train's ranks): ``classname`` ``<playbook>.<check>`` (``smoke.health``,
``prepare.net_health``, ``train.rank``), ``name`` the server (with its device and rank where the check is a rank's). A failed
check has ``<failure message="<the one-line cause>">`` with the whole text inside; a check that did not run has
``<skipped message="why">``. The document is ``<testsuites>`` holding one ``<testsuite>`` (its ``tests``, ``failures``,
``errors``, ``skipped``, ``time`` and ``timestamp``), the layout Jenkins' JUnit plugin and GitLab's test reports read.

Text from the servers (a rank's log line, a tool's message) may hold anything: characters XML 1.0 cannot carry are
replaced (:func:`xml_text`), and ElementTree escapes the rest, so no input breaks the document. The playbooks write it on
the controller with ``ascend.cluster.controller_file`` (a temporary file renamed into place).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ansible_collections.ascend.cluster.plugins.plugin_utils._errors import ClusterSpecError

# XML 1.0 allows tab, newline, carriage return and everything from U+0020 but the surrogates and U+FFFE / U+FFFF.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# A failure's message attribute: its first line, cut here.
MESSAGE_CHARS = 500
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


def xml_text(value: Any) -> str:
    """``value`` as text XML 1.0 can hold (characters it cannot are replaced by U+FFFD)."""
    return _NOT_XML.sub("\ufffd", "" if value is None else str(value))


def one_line(text: Any) -> str:
    """The first non-blank line of ``text``, at most :data:`MESSAGE_CHARS` characters."""
    for line in xml_text(text).splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 3] + "..."
    return ""


def case(classname: str, name: str, outcome: str = PASSED, text: Any = None, time: Any = None) -> dict:
    """One check: ``outcome`` :data:`PASSED`, :data:`FAILED` (``text`` is why) or :data:`SKIPPED` (``text`` is why)."""
    if outcome not in (PASSED, FAILED, SKIPPED):
        raise ClusterSpecError(f"a test case's outcome is passed, failed or skipped, not {outcome!r}")
    seconds = float(time) if isinstance(time, (int, float)) and not isinstance(time, bool) and time >= 0 else 0.0
    return {"classname": classname, "name": name, "outcome": outcome, "text": "" if text is None else str(text), "time": seconds}


def junit_xml(suite: str, cases: Sequence[Mapping[str, Any]], timestamp: float | None = None) -> str:
    """The JUnit XML document of one test suite named ``suite`` holding ``cases`` (:func:`case`'s), as text."""
    if isinstance(cases, (str, Mapping)) or not isinstance(cases, Sequence):
        raise ClusterSpecError("junit_xml: the cases must be a list")
    failures = sum(1 for c in cases if c["outcome"] == FAILED)
    skipped = sum(1 for c in cases if c["outcome"] == SKIPPED)
    total = round(sum(float(c.get("time") or 0) for c in cases), 3)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0", "skipped": str(skipped), "time": str(total)}
    root = ET.Element("testsuites", dict(name=xml_text(suite), **counts))
    when = datetime.fromtimestamp(timestamp, timezone.utc) if timestamp is not None else datetime.now(timezone.utc)
    node = ET.SubElement(root, "testsuite", dict(name=xml_text(suite), timestamp=when.strftime("%Y-%m-%dT%H:%M:%S"), **counts))
    for item in cases:
        attrs = {
            "classname": xml_text(item["classname"]),
            "name": xml_text(item["name"]),
            "time": str(round(float(item.get("time") or 0), 3)),
        }
        element = ET.SubElement(node, "testcase", attrs)
        if item["outcome"] == FAILED:
            failure = ET.SubElement(element, "failure", {"message": one_line(item["text"]) or "failed", "type": "failure"})
            failure.text = xml_text(item["text"])
        elif item["outcome"] == SKIPPED:
            ET.SubElement(element, "skipped", {"message": one_line(item["text"])})
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --- smoke: its summary's rows ---------------------------------------------------------------------------------------


def smoke_cases(summary: Mapping[str, Any]) -> list:
    """Each row of the smoke summary (``_net.smoke.smoke_report``) as a check: ``smoke.<stage>``, named by its server, device
    and rank (``job`` for a row of the whole job); a ``FAIL`` row fails with its detail."""
    if not isinstance(summary, Mapping) or not isinstance(summary.get("rows"), list):
        raise ClusterSpecError("junit smoke: the input must be the smoke summary (ascend_smoke)")
    cases = []
    for row in summary["rows"]:
        where = [str(row.get("server") or "job")]
        if row.get("device") is not None:
            where.append(f"device {row['device']}")
        if row.get("rank") is not None:
            where.append(f"rank {row['rank']}")
        failed = row.get("result") != "OK"
        cases.append(
            case(f"smoke.{row.get('stage')}", " ".join(where), FAILED if failed else PASSED, row.get("detail") if failed else None)
        )
    return cases


# --- train: the servers' pre-flight and stage, then each rank --------------------------------------------------------


def _result(hostvars: Mapping[str, Any], host: str, name: str) -> Mapping[str, Any]:
    value = (hostvars.get(host) or {}).get(name) if hasattr(hostvars, "get") else None
    return value if isinstance(value, Mapping) else {}


def _failed(result: Mapping[str, Any]) -> bool:
    return bool(result.get("failed") or result.get("unreachable"))


def train_cases(
    hosts: Sequence[str],
    hostvars: Mapping[str, Any],
    summary: Mapping[str, Any] | None = None,
    refusal: str | None = None,
    stage_failures: Sequence[str] = (),
    remaining: Sequence[str] | None = None,
    job_id: str = "",
) -> list:
    """The train run's checks: ``train.preflight`` per server that takes part (its ``_ascend_preflight``), ``train.launch``
    for the job (the controller's refusal of every server's pre-flight, a stage that failed), then ``train.rank`` per rank
    from the job's summary (``ascend_job_summary``): a failed rank fails with its outcome and error, a rank stopped
    after another's failure is skipped (it did not fail itself), a rank stopped from outside fails (the job did not end),
    a rank still running (``wait=false``) is skipped; each earlier attempt of a restarted job is ``train.attempt``,
    failed with its line. Without a summary, ``train.launch`` says what is known: the servers that failed before a job
    was launched (the play's hosts not in ``remaining``; their messages are in the play's output), or job ``job_id``
    launched and not watched."""
    cases = []
    for host in hosts:
        result = _result(hostvars, host, "_ascend_preflight")
        if not result or result.get("skipped"):
            continue
        cases.append(case("train.preflight", host, FAILED if _failed(result) else PASSED, result.get("msg") if _failed(result) else None))
    problems = [p for p in ([refusal] if refusal else []) + list(stage_failures or []) if p]
    if problems:
        cases.append(case("train.launch", "job", FAILED, "\n".join(str(p) for p in problems)))
    if isinstance(summary, Mapping):
        for attempt in summary.get("attempts") or []:
            cases.append(case("train.attempt", f"attempt {attempt.get('attempt')} ({attempt.get('job_id')})", FAILED, attempt.get("line")))
        failure = summary.get("failure") or {}
        for rank in summary.get("ranks") or []:
            name = f"{rank.get('server')} device {rank.get('device_id')} rank {rank.get('rank_id')}"
            state, outcome = rank.get("state"), str(rank.get("outcome") or rank.get("state"))
            why = "; ".join(str(p) for p in (outcome, rank.get("error")) if p)
            if state == "done":
                cases.append(case("train.rank", name, PASSED, time=rank.get("duration_s")))
            elif state == "failed":
                cases.append(case("train.rank", name, FAILED, why, rank.get("duration_s")))
            elif state == "stopped" and failure.get("rank_id") not in (None, -1) and not failure.get("stopped_by"):
                cases.append(
                    case("train.rank", name, SKIPPED, f"{why} (rank {failure.get('rank_id')} failed first)", rank.get("duration_s"))
                )
            elif state == "stopped":
                cases.append(case("train.rank", name, FAILED, why, rank.get("duration_s")))
            else:
                cases.append(case("train.rank", name, SKIPPED, f"{state}: not ended when the playbook returned"))
    elif not problems:
        lost = [host for host in hosts if remaining is not None and host not in remaining]
        if lost:
            cases.append(
                case(
                    "train.launch",
                    "job",
                    FAILED,
                    f"the run failed on {', '.join(lost)} before a job was watched (the play's output says why)",
                )
            )
        elif job_id:
            cases.append(case("train.launch", "job", SKIPPED, f"job {job_id} launched and not watched: its ranks' outcome is not known"))
        else:
            cases.append(case("train.launch", "job", SKIPPED, "no job was launched"))
    return cases


# --- prepare: each stage on each server ------------------------------------------------------------------------------

PREPARE_STAGES = ("facts", "device_ip", "firewall", "net_health", "rank_table")


def prepare_cases(
    hosts: Sequence[str],
    hostvars: Mapping[str, Any],
    net_health: Mapping[str, Any] | None = None,
    rank_table_written: bool = False,
    remaining: Sequence[str] | None = None,
) -> list:
    """The prepare run's checks, per server: ``prepare.facts`` (``_ascend_facts_read``), ``prepare.device_ip``
    (``device_ip_result``), ``prepare.firewall`` (``_ascend_firewall_result``), ``prepare.net_health`` (the health
    report's problems on the server's devices) and ``prepare.rank_table`` (written with the others, or why not).

    A stage whose task found nothing to do (skipped: the device IPs already as planned) passed; a stage that did not
    run on a server is skipped: ``remaining`` (the play's hosts still in it) tells a server that failed in an earlier
    stage; a stage none of whose tasks ran (``--tags``) says so."""
    still = set(remaining if remaining is not None else hosts)
    report = net_health if isinstance(net_health, Mapping) else None
    problems = [str(p) for p in (report or {}).get("problems") or []]
    cases = []
    for host in hosts:
        failed_at = None
        for stage, name in (("facts", "_ascend_facts_read"), ("device_ip", "device_ip_result"), ("firewall", "_ascend_firewall_result")):
            result = _result(hostvars, host, name)
            if failed_at:
                cases.append(case(f"prepare.{stage}", host, SKIPPED, f"not run: the server failed at {failed_at}"))
            elif not result:  # its task did not run here (--tags, or the play ended before it)
                cases.append(case(f"prepare.{stage}", host, SKIPPED, "not run on this server"))
            elif _failed(result):
                failed_at = stage
                cases.append(case(f"prepare.{stage}", host, FAILED, result.get("msg") or "failed"))
            else:
                cases.append(case(f"prepare.{stage}", host, PASSED))
        if failed_at is None and host not in still:
            failed_at = "an earlier task (see the play's output)"
        own = [p for p in problems if p.startswith((f"{host} device ", f"{host}: "))]
        if failed_at:
            cases.append(case("prepare.net_health", host, SKIPPED, f"not run: the server failed at {failed_at}"))
        elif report is None:
            cases.append(case("prepare.net_health", host, SKIPPED, "not run"))
        elif own:
            more = f" (+{len(own) - 1} more)" if len(own) > 1 else ""
            cases.append(case("prepare.net_health", host, FAILED, f"{own[0]}{more}\n" + "\n".join(own)))
        else:
            cases.append(case("prepare.net_health", host, PASSED))
        if rank_table_written and not failed_at:
            cases.append(case("prepare.rank_table", host, PASSED))
        else:
            cases.append(
                case("prepare.rank_table", host, SKIPPED, f"not written: the server failed at {failed_at}" if failed_at else "not written")
            )
    return cases


# --- any playbook: the servers its first read could not reach --------------------------------------------------------


def reached_cases(playbook: str, hosts: Sequence[str], lost: Sequence[str], hostvars: Mapping[str, Any] | None = None) -> list:
    """``<playbook>.reached`` per server: failed for each of ``lost`` (with its read's message when known)."""
    cases = []
    for host in hosts:
        if host in lost:
            result = _result(hostvars or {}, host, "_ascend_facts_read")
            cases.append(case(f"{playbook}.reached", host, FAILED, result.get("msg") or "could not be reached or read"))
        else:
            cases.append(case(f"{playbook}.reached", host, PASSED))
    return cases
