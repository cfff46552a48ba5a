#!/usr/bin/python
# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module training_watch: documentation and argument spec of the controller action of that name.

The action plugin (``plugins/action/training_watch.py``) does the work and validates its options
against the same spec (``module_utils/_options.py``), which ``main`` declares so that sanity checks
this documentation against it. There is no target side: run as a module, it only says so.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: training_watch
short_description: Watch a training job's ranks on one server until they end; stop every rank when one fails
version_added: 0.1.0
description:
  - Runs on the controller, one task per server. Every O(full_poll_interval) seconds it calls
    M(ascend.cluster.training_job) with C(state=poll) on the server; every O(poll_interval) seconds in between
    it probes, with one shell command, for the abort file a failing rank's runner writes at once.
  - When a local rank has failed, writes the job's controller-side marker C(<controller_dir>/<job_id>/failed)
    (the first writer wins, so it names the first failing rank) and fails with that rank's server, device,
    exit code and log tail. A rank killed by a signal nobody of ours sent (the OOM killer's SIGKILL, a
    SIGSEGV) has failed too; the message names the signal.
  - When every local rank has ended but not every one exited 0 by itself - the job was stopped by
    C(ascend.cluster.stop), a signal to a rank's runner, anything but its own ranks finishing - writes the
    marker too and fails, naming who stopped it (the first line of the job's C(abort) file on the server).
  - When another server's watcher wrote the marker, stops the local ranks (C(state=stop)) and fails with the
    same message. Between polls it wakes up as soon as the marker appears.
  - When the server stops answering - two probes in a row (or a full poll and a probe) get no answer within
    O(probe_timeout), cannot connect, or do not run through - writes the marker naming the server and its lost
    ranks (C(h2 stopped answering at 12:03:04; ranks 8-15 lost)) and fails; the other servers' watchers stop
    their ranks. Ranks whose runner is gone before recording an exit (killed with SIGKILL) are lost too, and
    the full poll that follows stops the server's other ranks, including a training left running without its runner.
  - A Ctrl-C to C(ansible-playbook) stops the job on this server, or leaves it running; see
    O(detach_on_interrupt). Either way the watch ends at once, saying on the controller's terminal
    what it stopped or how to follow and stop the job it left.
  - The watcher of the server holding rank 0 prints progress (ranks by state, cluster-wide, and rank 0's
    last log line) every O(progress_interval) seconds.
  - Used by the C(ascend.cluster.launch_training) role.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  job_id:
    description: The job to watch.
    type: str
    required: true
  controller_dir:
    description: Controller-side directory of jobs (failure marker, per-server summaries).
    type: path
    required: true
  server:
    description: Name of the server in messages; default the inventory hostname.
    type: str
  poll_interval:
    description: Seconds between cheap probes for a failing rank's abort file (one shell command).
    type: float
    default: 0.25
  full_poll_interval:
    description: Seconds between full polls of every rank (M(ascend.cluster.training_job) C(state=poll)).
    type: float
    default: 5.0
  probe_timeout:
    description:
      - Seconds a probe may take before it counts as missed; two misses in a row make the server lost.
      - With the default O(poll_interval) a dead server is noticed within about 2 x (O(probe_timeout) + O(poll_interval)).
    type: float
    default: 1.5
  progress_interval:
    description: Seconds between progress lines.
    type: float
    default: 10.0
  tail_lines:
    description: Lines of the failing rank's log in the message.
    type: int
    default: 20
  detach_on_interrupt:
    description:
      - What an operator's Ctrl-C (or a SIGTERM) to C(ansible-playbook) does to the watched job.
      - V(false) stops every rank of the job on this server (as C(ascend.cluster.stop) would), after
        O(interrupt_window) seconds in which a second Ctrl-C leaves the job running instead; the
        ranks' C(stopped_by) names the interruption.
      - V(true) leaves the job running and prints the C(ascend.cluster.status) and
        C(ascend.cluster.stop) commands that follow and end it.
    type: bool
    default: false
  interrupt_window:
    description:
      - Seconds after a first Ctrl-C in which a second one leaves the job running instead of stopping it
        (V(0) stops at once). A SIGTERM stops at once.
    type: float
    default: 1.0
  results_file:
    description:
      - The launch task's async results file (its C(results_file)). When the watch ends (not interrupted, the server still
        answering) the action then collects the server's results in the same task, as M(ascend.cluster.training_results)
        does - the supervisor's result, its async file removed, every rank's log fetched to O(logs_dest) (RV(results)).
      - Unset collects nothing.
    type: path
  logs_dest:
    description: With O(results_file), the directory on the controller that receives the logs as C(device_<rank>.log); unset fetches none.
    type: path
  results_timeout:
    description: With O(results_file), seconds to wait for the supervisor's result.
    type: float
    default: 20
  ranks:
    description:
      - This server's ranks as the stage last read them, the C(staged.ranks) of M(ascend.cluster.training_ranks). The watch
        then probes from the start and makes its first full poll as after one - a second later while ranks wait at the
        gate (their pids come with the start), else O(full_poll_interval) later - or when the ranks end.
      - Unset, the watch starts with a full poll (a module round trip) to learn them.
    type: list
    elements: dict
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.jobs
  - ascend.cluster.jobs.grace
attributes:
  action:
    support: full
    description: Runs on the controller, calling M(ascend.cluster.training_job) on the server.
  check_mode:
    support: none
    description: Stops ranks on failure.
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: none
    description: Watches a running job.
"""

EXAMPLES = r"""
- name: Watch the job
  ascend.cluster.training_watch:
    job_id: "{{ ascend_job_id }}"
    controller_dir: ~/.ansible/ascend-jobs
"""

RETURN = r"""
ranks:
  description: The server's ranks at the end (see M(ascend.cluster.training_job)).
  returned: always
  type: list
  elements: dict
server:
  description: The server watched.
  returned: always
  type: str
first_failure:
  description:
    - What ended the job, as written in the marker - the first failing rank (rank_id, device_id, server, rc,
      error, log, tail); or who stopped it (server, stopped_by, ranks); or why a server could not be watched
      (server, error); or the server's lost ranks (server, lost, since - when it stopped answering, or null
      when the ranks' runners died -, error).
  returned: failed
  type: dict
host_lost:
  description: The server stopped answering (two probes in a row missed); the play's later tasks leave it alone.
  returned: failed
  type: bool
results:
  description:
    - With O(results_file), what M(ascend.cluster.training_results) returned for the server (C(ranks), C(logs), C(dest); C(failed)
      and C(msg) when the results or logs could not be collected - the watch's own outcome does not change).
  returned: with results_file, when the watch ended with the server answering
  type: dict
interrupted:
  description:
    - How a Ctrl-C or SIGTERM to C(ansible-playbook) ended the watch - C(signal) (2 or 15), C(action)
      (V(stopped) or V(left_running)) and, when stopped, C(stopped) (the rank ids that were running).
  returned: when interrupted
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ascend.cluster.plugins.module_utils import _options as options

ARGS = options.WATCH


def main() -> None:
    module = AnsibleModule(argument_spec=ARGS, supports_check_mode=False)
    module.fail_json(msg="ascend.cluster.training_watch runs on the controller (its action plugin); it has no target side")


if __name__ == "__main__":
    main()
