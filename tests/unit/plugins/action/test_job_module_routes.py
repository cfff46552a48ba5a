"""The training_ranks and training_results actions send their calls to training_job (state=stage, state=results).

One module for the whole job means one module payload built per run (docs/benchmarks.md, session 10): the calls'
options go in ``stage`` / ``results`` as they are; an async start (no ``detach``) still runs training_ranks itself.
"""

from __future__ import annotations

from ansible_collections.ascend.cluster.plugins.action import training_ranks as ranks_action
from ansible_collections.ascend.cluster.plugins.action import training_results as results_action
from tests.unit.plugins.action.fakes import action_for

STAGE = {
    "job_id": "j",
    "run_dir": "/run/j",
    "argv": ["true"],
    "ranks": [{"rank_id": 0, "device_id": 0}],
    "local_count": 1,
    "rank_size": 1,
    "rank_table_path": "/etc/rt.json",
}


def test_a_detached_start_is_one_training_job_stage_call_with_the_options_as_they_are():
    plugin, calls = action_for(ranks_action, dict(STAGE, detach=True), answer={"changed": True, "started": 1})
    result = plugin.run(task_vars={"inventory_hostname": "h1"})
    assert result.get("started") == 1 and not result.get("failed"), result
    assert calls == [{"module_name": "ascend.cluster.training_job", "module_args": {"state": "stage", "stage": dict(STAGE, detach=True)}}]


def test_a_start_without_detach_runs_the_training_ranks_module_itself():
    plugin, calls = action_for(ranks_action, dict(STAGE), answer={"changed": True})
    plugin._task.action = "ascend.cluster.training_ranks"
    executed = []

    def execute_module(module_name=None, module_args=None, task_vars=None, wrap_async=False):
        executed.append((module_name, module_args))
        return {"changed": True}

    plugin._execute_module = execute_module
    plugin.run(task_vars={"inventory_hostname": "h1"})
    assert executed == [(None, dict(STAGE))] and calls == []  # None: the task's own module, training_ranks


def test_results_are_one_training_job_results_call():
    args = {"job_id": "j", "results_file": "/jobs/j/supervisor.json", "poll": True}
    plugin, calls = action_for(results_action, dict(args), answer={"changed": True, "runner_finished": True, "runner": {}})
    result = plugin.run(task_vars={"inventory_hostname": "h1"})
    assert result.get("runner_finished") is True, result
    assert calls == [
        {"module_name": "ascend.cluster.training_job", "module_args": {"state": "results", "results": dict(args, archive=False)}}
    ]
