"""Which arm a panel's arm name is, and the policies it runs.

An arm of ``panel.arms`` is declared (``panel.declare``) or a registered preset; a
declared arm's policies are those of the registered arm its ``policies`` names, built
from its own portfolio and controls when it names them.
"""

from __future__ import annotations

from collections.abc import Mapping

from fire_exp.analysis.plan import did_you_mean
from fire_exp.arms.spec import ArmSpec, preset
from fire_exp.errors import InputError
from fire_exp.policies.arms import ARM_REGISTRY, ArmPolicies, build_arm
from fire_exp.policies.loader import Portfolio, load_portfolio

__all__ = ["arm_policies", "arm_spec"]


def arm_spec(name: str, declared: Mapping[str, ArmSpec]) -> ArmSpec:
    """The spec of arm ``name``: declared in the panel, else a registered preset.

    Raises:
        InputError: a declared arm that takes a registered arm's name, or an arm neither
            declared nor registered (the message lists both kinds).
    """
    if name in declared:
        if name in ARM_REGISTRY.names():
            raise InputError("configs/panel", f"declare.{name}", "a registered arm's name",
                             "give the declared arm a name of its own")
        return declared[name]
    try:
        ARM_REGISTRY.get(name)
    except InputError:
        hint = did_you_mean(name, [*declared, *ARM_REGISTRY.names()])
        raise InputError("configs/panel", "arms", f"unknown arm {name!r}",
                         f"{hint}; declare it under panel.declare, or name a registered "
                         "arm (real-minus-FAMILY too)") from None
    return preset(name)


def arm_policies(spec: ArmSpec, portfolio: Portfolio, controls: Portfolio) -> ArmPolicies:
    """The policies ``spec`` runs, built from its own portfolio and controls if it names
    them, else from the panel's ``portfolio`` and ``controls``.

    Raises:
        InputError: a policy source that does not load, or ``policies`` naming no
            registered arm (field ``declare.ARM.policies``).
    """
    if spec.portfolio is not None:
        portfolio = load_portfolio(spec.portfolio)
    if spec.controls is not None:
        controls = load_portfolio(spec.controls)
    if not spec.declared:
        return build_arm(spec.name, portfolio, controls)
    try:
        built = build_arm(spec.policy_source, portfolio, controls)
    except InputError as exc:
        raise InputError("configs/panel", f"declare.{spec.name}.policies", exc.problem,
                         exc.fix) from None
    return ArmPolicies(spec.name, built.families, built.policy_arm, built.portfolio,
                       built.controls)
