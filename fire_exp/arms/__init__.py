"""Arms as the panel config declares them: a name and what it changes (policies, agent
parameters, instruction text, files in the working folder, safe environment settings).

The paper's five arms and the ablation arms are presets (:func:`preset`) of the same form.
``fire_exp.arms.build`` resolves a panel's arm names and policies, ``fire_exp.arms.place``
places an arm's files in an attempt (both imported where the panel is built, not here,
so reading a config stays light).
"""

from fire_exp.arms.spec import (
    FORBIDDEN_FOLDERS,
    NO_POLICIES,
    SAFE_ENVIRONMENT_PARAMS,
    ArmSpec,
    arm_specs_from_dict,
    check_file_destination,
    preset,
    resolve_agent_config,
    resolve_source,
)

__all__ = ["FORBIDDEN_FOLDERS", "NO_POLICIES", "SAFE_ENVIRONMENT_PARAMS", "ArmSpec",
           "arm_specs_from_dict", "check_file_destination", "preset", "resolve_agent_config",
           "resolve_source"]
