"""What a backend can do beyond the contract's core (:class:`Capability`), and what a task
needs of its box, checked against a backend's capabilities before the panel's first
attempt (:func:`check_task`; Harbor checks a task against its environment's capabilities
when the environment is built).

A task needs ``NETWORK_POLICY`` when its ``[environment] network_mode`` is not ``public``
and ``SERVICES`` when it sets ``[environment] services = true``. A backend without
``NETWORK_POLICY`` may name a setting (``Environment.network_waiver``, local's
``allow_network``) with which the user lets such a task run with the box's network; each
of its records then names the policy that was not kept (``network_not_enforced``).
"""

from __future__ import annotations

from collections.abc import Set
from enum import StrEnum

from fire_exp.errors import PreflightError
from fire_exp.tasks.model import Task

__all__ = ["Capability", "check_task", "network_not_enforced"]


class Capability(StrEnum):
    """What a backend can do beyond the contract's core (``Environment.capabilities``)."""

    SERVICES = "services"  # work the agent detached (a server) outlives its session
    NETWORK_POLICY = "network_policy"  # the task's network_mode is enforced
    HOST_PROGRAMS = "host_programs"  # the box is this machine: its commands run its programs
    IMAGES = "images"  # prepare builds images from a base (``fire-exp images``)
    EGRESS_ALLOWLIST = "egress_allowlist"  # open_egress: only listed endpoints are reached
    HOST_HOOKS = "host_hooks"  # the box is this machine: a hook runs fire-exp's command
    HOOK_RELAY = "hook_relay"  # open_stream: hook calls in the box are answered on the host
    INSTALL_AGENT = "install_agent"  # install_agent/prepare_agent: a CLI put into the box
    AGENT_USER = "agent_user"  # run_agent_as: the agent's session runs as an unprivileged user


def network_not_enforced(task: Task, capabilities: Set[Capability]) -> str | None:
    """The task's ``network_mode`` when a box of ``capabilities`` does not enforce it
    (None: it is ``public``, or enforced)."""
    mode = task.environment.network_mode
    return None if mode == "public" or Capability.NETWORK_POLICY in capabilities else mode


def check_task(task: Task, *, backend: str, capabilities: Set[Capability],
               waiver: str | None = None, waived: bool = False) -> None:
    """Refuse ``task`` when a box of ``backend`` (with ``capabilities``) cannot give what
    it needs; ``waived``: the user set ``waiver``, so an unenforced network runs.

    Raises:
        PreflightError: naming the task, its task.toml field and the fix.
    """
    where = f"task {task.name}: task.toml [environment]"
    if task.environment.services and Capability.SERVICES not in capabilities:
        raise PreflightError(
            f"{where} services = true, and environment={backend} cannot keep a service "
            f"running after the agent's session (no {Capability.SERVICES.value} capability)",
            f"run it with an environment that has the {Capability.SERVICES.value} capability")
    mode = network_not_enforced(task, capabilities)
    if mode is None or waived:
        return
    fix = (f"run it with an environment that has the {Capability.NETWORK_POLICY.value} "
           "capability (environment=docker)")
    if waiver is not None:
        fix += (f", or set environment.{waiver}=true to run it with this machine's network "
                "(each record then names network_not_enforced)")
    raise PreflightError(f'{where} network_mode = "{mode}", which environment={backend} '
                         f"cannot enforce (no {Capability.NETWORK_POLICY.value} capability)",
                         fix)
