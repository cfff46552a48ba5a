"""A JUnit XML report read as CI reads it: with junitparser (tests/requirements.txt), the library CI tools and report
uploaders use to read these files - never by matching strings. Shared by the unit and integration tests of -e junit."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from junitparser import Failure, JUnitXml, Skipped, TestSuite


class Case(NamedTuple):
    classname: str
    name: str
    outcome: str  # passed, failed, skipped
    message: str | None
    text: str | None


def read_report(source: Path | str) -> tuple[TestSuite, list[Case]]:
    """The one suite of the report (a file, or its text) and its cases; asserts its counts are its cases'."""
    xml = JUnitXml.fromfile(str(source)) if isinstance(source, Path) else JUnitXml.fromstring(source)
    suites = list(xml) if isinstance(xml, JUnitXml) else [xml]
    assert len(suites) == 1, suites
    [suite] = suites
    declared = (suite.tests, suite.failures, suite.errors, suite.skipped)
    cases = []
    for item in suite:
        results = list(item.result)
        failure = next((r for r in results if isinstance(r, Failure)), None)
        skipped = next((r for r in results if isinstance(r, Skipped)), None)
        if failure is not None:
            cases.append(Case(item.classname, item.name, "failed", failure.message, failure.text))
        elif skipped is not None:
            cases.append(Case(item.classname, item.name, "skipped", skipped.message, None))
        else:
            cases.append(Case(item.classname, item.name, "passed", None, None))
    suite.update_statistics()  # counted again from the cases: what the file says must be what it holds
    assert declared == (suite.tests, suite.failures, suite.errors, suite.skipped), (declared, suite)
    return suite, cases
