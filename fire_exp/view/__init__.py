"""The run explorer: ``fire-exp view RUN`` writes a static site of a run's attempts.

``build_view`` reads a run folder or an attempts file, analyses it with
``fire_exp.analysis.analyze`` and writes the site (see ``site.py`` for its layout and
docs/view.md for what it shows).
"""

from fire_exp.view.build import build_view
from fire_exp.view.collect import RunData, collect, secret_redactor
from fire_exp.view.site import Site, write_site

__all__ = ["RunData", "Site", "build_view", "collect", "secret_redactor", "write_site"]
