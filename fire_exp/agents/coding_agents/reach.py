"""How a CLI in its box reaches its model endpoint: the URL it is given, the CA it trusts.

- **The URL.** Where the box gates egress (Docker, a task without network), an
  ``http://`` endpoint appears to the box at a forward listener of the egress proxy
  (``EgressProxy.url_in_box``): ``http://127.0.0.1:8799/v1`` on the host becomes
  ``http://GATEWAY:PORT/v1`` in the box, since the box's own ``127.0.0.1`` is not the
  host's. An ``https://`` endpoint keeps its URL (TLS end to end, through
  ``HTTPS_PROXY``). The record and the manifest keep the user's URL; only the CLI's
  configuration and variables get the box's (:func:`box_url`, :func:`box_variables`).
- **The CA.** ``agent.ca_bundle=FILE`` (a PEM file) is placed in the box read-only (root's,
  mode 0444, in the agent folder the agent's user cannot write) and named to the CLI in
  the variable it reads: ``CODEX_CA_CERTIFICATE`` (Codex), ``NODE_EXTRA_CA_CERTS`` (Claude
  Code, which adds it to Node's own CAs). Another CLI gets ``SSL_CERT_FILE``; the two known
  ones do not, because it *replaces* the trust store of every command the agent runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from fire_exp.errors import InputError

__all__ = ["CA_FILE", "CA_VARIABLES", "BoxUrls", "box_url", "box_variables", "ca_bundle_path",
           "ca_placement"]

CA_FILE = "ca-bundle.pem"
CA_VARIABLES = {"codex": "CODEX_CA_CERTIFICATE", "claude-code": "NODE_EXTRA_CA_CERTS"}
_PEM = b"-----BEGIN CERTIFICATE-----"


class BoxUrls(Protocol):
    """What rewrites a URL for the box (``EgressProxy``)."""

    def url_in_box(self, url: str) -> str:
        """The URL a process in the box uses for ``url``."""
        ...


def box_url(egress: BoxUrls | None, url: str | None) -> str | None:
    """``url`` as the box reaches it (None stays None; no egress gate: unchanged).

    >>> class Gate:
    ...     def url_in_box(self, url): return url.replace("127.0.0.1:8799", "172.18.0.1:40001")
    >>> box_url(Gate(), "http://127.0.0.1:8799/v1"), box_url(None, "http://127.0.0.1:8799/v1")
    ('http://172.18.0.1:40001/v1', 'http://127.0.0.1:8799/v1')
    """
    if url is None or egress is None:
        return url
    return egress.url_in_box(url)


def box_variables(egress: BoxUrls | None, variables: Mapping[str, str]) -> dict[str, str]:
    """The ``*_BASE_URL`` variables of ``variables`` rewritten for the box (the others are
    not returned: merge the result over them)."""
    return {k: box_url(egress, v) or v for k, v in variables.items()
            if k.endswith("_BASE_URL")}


def ca_bundle_path(value: str | None, where: str) -> Path | None:
    """``agent.ca_bundle``: None, or a readable PEM file with a certificate (refused where
    it enters, naming the file and the fix)."""
    if value in (None, ""):
        return None
    path = Path(str(value)).expanduser()
    fix = "set agent.ca_bundle to a PEM file of the CA(s) that signed the endpoint's certificate"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(where, "ca_bundle", f"cannot read {path}: {exc.strerror}", fix) from None
    if _PEM not in data:
        raise InputError(where, "ca_bundle", f"{path} holds no PEM certificate "
                         f"({_PEM.decode()})", fix)
    return path.resolve()


def ca_placement(ca_bundle: Path | None, agent_dir: str, target: str
                 ) -> tuple[dict[str, bytes], dict[str, str]]:
    """The box file (read-only) and the variable that give the CLI ``ca_bundle``.

    >>> ca_placement(None, "/opt/fire-exp/agent", "codex")
    ({}, {})
    """
    if ca_bundle is None:
        return {}, {}
    dest = f"{agent_dir}/{CA_FILE}"
    return {dest: ca_bundle.read_bytes()}, {CA_VARIABLES.get(target, "SSL_CERT_FILE"): dest}
