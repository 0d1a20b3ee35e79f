"""Arms as the panel config declares them: a name and what it changes (policies, agent
parameters, instruction text, files in the working folder, safe environment settings).

The paper's five arms and the ablation arms are presets (:func:`preset`) of the same form.
"""

from fire_exp.arms.spec import (
    FORBIDDEN_FOLDERS,
    NO_POLICIES,
    SAFE_ENVIRONMENT_PARAMS,
    ArmSpec,
    arm_specs_from_dict,
    check_file_destination,
    preset,
    resolve_source,
)

__all__ = ["FORBIDDEN_FOLDERS", "NO_POLICIES", "SAFE_ENVIRONMENT_PARAMS", "ArmSpec",
           "arm_specs_from_dict", "check_file_destination", "preset", "resolve_source"]
