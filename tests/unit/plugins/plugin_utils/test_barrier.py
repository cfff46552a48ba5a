"""The barrier between one run's workers (plugin_utils/_barrier): who must arrive, and when the wait ends."""

from __future__ import annotations

import os
import threading

import pytest

from ansible_collections.ascend.cluster.plugins.plugin_utils import _barrier as barrier


@pytest.mark.parametrize(
    "hosts, forks, expected",
    [
        (["h1", "h2"], 5, True),
        (["h1", "h2"], 2, True),
        (["h1", "h2", "h3"], 2, False),  # the third host's worker starts only after a first one ended
        (["h1"], 5, False),  # nobody to wait for
        ([], 5, False),
        (["h1", "h2"], None, False),  # forks unknown: never risk a wait nobody can end
    ],
)
def test_applies_only_when_every_worker_runs_at_once(hosts, forks, expected):
    assert barrier.applies(hosts, forks) is expected


def test_path_is_under_the_runs_local_tmp_and_file_name_safe(tmp_path):
    assert barrier.path(str(tmp_path), "staged-job/1 x") == str(tmp_path / "ascend-barrier-staged-job_1_x")


def test_a_host_that_arrived_is_no_longer_missing_and_arriving_twice_is_harmless(tmp_path):
    directory = str(tmp_path / "b")
    assert barrier.missing(directory, ["h1", "h2"]) == ["h1", "h2"]  # no directory yet
    barrier.arrive(directory, "h2")
    barrier.arrive(directory, "h2")
    assert barrier.missing(directory, ["h1", "h2"]) == ["h1"]
    assert oct(os.stat(directory).st_mode & 0o777) == "0o700"


def test_host_names_that_are_not_file_names_are_told_apart(tmp_path):
    directory = str(tmp_path / "b")
    barrier.arrive(directory, "10.0.0.1")
    assert barrier.missing(directory, ["10.0.0.1", "10.0.0.2", "../h"]) == ["10.0.0.2", "../h"]
    assert sorted(os.listdir(directory)) == ["10.0.0.1"]  # nothing written outside it


def test_wait_ends_as_soon_as_everyone_arrived(tmp_path):
    directory = str(tmp_path / "b")
    barrier.arrive(directory, "h1")
    naps: list = []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        barrier.arrive(directory, "h2")  # h2's wait ends while h1 sleeps

    assert barrier.wait(directory, ["h1", "h2"], timeout=60, sleep=nap) == []
    assert naps == [0.1]


def test_wait_gives_up_after_the_timeout_naming_who_is_late(tmp_path):
    now = [0.0]

    def nap(seconds: float) -> None:
        now[0] += seconds

    directory = str(tmp_path / "b")
    barrier.arrive(directory, "h1")
    assert barrier.wait(directory, ["h1", "h2", "h3"], timeout=1.0, interval=0.25, clock=lambda: now[0], sleep=nap) == ["h2", "h3"]
    assert now[0] == pytest.approx(1.0)


def test_two_waiters_release_each_other(tmp_path):
    """Two workers of one run: each arrives, then waits for the other (real threads, real sleeps)."""
    directory = str(tmp_path / "b")
    results: dict = {}

    def worker(host: str) -> None:
        barrier.arrive(directory, host)
        results[host] = barrier.wait(directory, ["h1", "h2"], timeout=10, interval=0.01)

    threads = [threading.Thread(target=worker, args=(host,)) for host in ("h1", "h2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert results == {"h1": [], "h2": []}
