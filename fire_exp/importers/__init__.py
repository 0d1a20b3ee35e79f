"""Importers: other harnesses' results as fire-exp attempts files (docs/importers.md)."""

from fire_exp.importers.contract import Imported, Importer
from fire_exp.importers.harbor import HarborImporter, cause_for, import_harbor, load_mapping
from fire_exp.importers.mapping import ArmFields, ArmMapping, field_value, with_order

__all__ = ["ArmFields", "ArmMapping", "HarborImporter", "Imported", "Importer", "cause_for",
           "field_value", "import_harbor", "load_mapping", "with_order"]
