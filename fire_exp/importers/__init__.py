"""Importers: other harnesses' results as fire-exp attempts files."""

from fire_exp.importers.harbor import ArmMapping, cause_for, import_harbor, load_mapping

__all__ = ["ArmMapping", "cause_for", "import_harbor", "load_mapping"]
