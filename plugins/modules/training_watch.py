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
short_description: Follow a training job through its group until it ends; one task for the whole job
version_added: 0.1.0
description:
  - Runs on the controller, once for the job (C(run_once), delegated to the server that runs the job's coordinator,
    O(coordinator)). The job watches itself - every server's supervisor is a member of the job's group, and the
    coordinator relays the first failure, stop or lost server to every member (docs/launch.md, I(The job's group)) -
    so the watch only reads the coordinator's view, C(<job_root>/<job_id>/group.json) on that server, every
    O(poll_interval) seconds with one shell command in one shell session. It holds one worker and one connection
    whatever the number of servers; C(forks) does not matter to it.
  - Prints progress (ranks by state over the whole job, rank 0's last log line) every O(progress_interval) seconds.
  - When the group has ended, returns every rank's final state; when the job did not finish, fails with the job's
    first failure (RV(first_failure)) - the first failing rank with its server, device, exit code and log tail, who
    stopped the job, or the server that stopped answering and its lost ranks. The message says every rank was stopped
    only when the group confirmed it; ranks whose server was lost are named as not confirmed.
  - When the coordinator's server stops answering the controller (two reads in a row get no answer within
    O(probe_timeout), or cannot connect), fails with RV(coordinator_lost); every member stops its ranks when it loses
    the coordinator, which the watch cannot confirm (the launch role then asks each server).
  - A Ctrl-C to C(ansible-playbook) stops the job through its group, or leaves it running; see
    O(detach_on_interrupt). Either way the watch ends at once, saying on the controller's terminal what was
    stopped (as the group confirmed it) or how to follow and stop the job it left.
  - Used by the C(ascend.cluster.launch_training) role.
author:
  - ascend.cluster contributors (!UNKNOWN)
options:
  job_id:
    description: The job to watch.
    type: str
    required: true
  controller_dir:
    description: Controller-side directory of jobs; the group's last view is kept in C(<controller_dir>/<job_id>/group.json).
    type: path
    required: true
  coordinator:
    description: The inventory name of the server that runs the job's coordinator (the task's connection goes there), for messages.
    type: str
    required: true
  servers:
    description: How many servers run the job, for messages.
    type: int
    default: 0
  poll_interval:
    description: Seconds between reads of the coordinator's view (one shell command each).
    type: float
    default: 0.25
  probe_timeout:
    description:
      - Seconds a read may take before it counts as missed; two misses in a row make the coordinator's server lost to the controller.
    type: float
    default: 1.5
  progress_interval:
    description: Seconds between progress lines.
    type: float
    default: 10.0
  lost_after:
    description: The group's O(ascend.cluster.training_ranks#module:group.lost_after), to know how long a stopping group may take to end.
    type: float
    default: 3.0
  detach_on_interrupt:
    description:
      - What an operator's Ctrl-C (or a SIGTERM) to C(ansible-playbook) does to the watched job.
      - V(false) stops every rank of the job through its group (the stop is written on the coordinator's server, whose
        supervisor passes it on), after O(interrupt_window) seconds in which a second Ctrl-C leaves the job running
        instead; the ranks' C(stopped_by) names the interruption.
      - V(true) leaves the job running, supervised by its group, and prints the C(ascend.cluster.status) and
        C(ascend.cluster.stop) commands that follow and end it.
    type: bool
    default: false
  interrupt_window:
    description:
      - Seconds after a first Ctrl-C in which a second one leaves the job running instead of stopping it
        (V(0) stops at once). A SIGTERM stops at once.
    type: float
    default: 1.0
extends_documentation_fragment:
  - ascend.cluster.tools
  - ascend.cluster.jobs
  - ascend.cluster.jobs.grace
attributes:
  action:
    support: full
    description: Runs on the controller; reads the coordinator's view with shell commands over the connection.
  check_mode:
    support: none
    description: Stops the job when interrupted.
  diff_mode:
    support: none
    description: No diff.
  idempotent:
    support: none
    description: Watches a running job.
"""

EXAMPLES = r"""
- name: Watch the job through its group, from the server that runs its coordinator
  ascend.cluster.training_watch:
    job_id: "{{ ascend_job_id }}"
    controller_dir: ~/.ansible/ascend-jobs
    coordinator: "{{ _ascend_coordinator_host }}"
  delegate_to: "{{ _ascend_coordinator_host }}"
  run_once: true
"""

RETURN = r"""
ranks:
  description:
    - Every rank of the job at the end, with C(host) (inventory name) and C(server) (address); a rank whose server was
      lost before it said how its rank ended has C(state=lost).
  returned: always
  type: list
  elements: dict
group:
  description: Always true (the result covers the whole job, not one server).
  returned: always
  type: bool
first_failure:
  description:
    - What ended the job - the first failing rank (rank_id, device_id, server, host, rc, error, log, tail); or who
      stopped it (server, stopped_by, ranks); or a server's lost ranks (server, lost, since - when it stopped
      answering, or null when the ranks' runners died -, error); or why the job could not start or be watched (error,
      with missing - the servers that never joined the group).
  returned: failed
  type: dict
lost_hosts:
  description: Servers lost or never joined (their ranks could not be confirmed); the play's later tasks leave them alone.
  returned: always
  type: list
  elements: str
unconfirmed:
  description: Rank ids whose end the group could not confirm, beside the failure's own lost ranks.
  returned: failed
  type: list
  elements: int
coordinator_lost:
  description: The coordinator's server stopped answering the controller.
  returned: when it did
  type: bool
interrupted:
  description:
    - How a Ctrl-C or SIGTERM to C(ansible-playbook) ended the watch - C(signal) (2 or 15), C(action)
      (V(stopped), V(left_running) or V(unreachable)) and, when stopped, C(stopped) (the rank ids stopped).
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
