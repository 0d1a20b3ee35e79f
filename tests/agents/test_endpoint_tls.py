"""An https:// endpoint whose certificate a private CA signed: ``agent.ca_bundle`` is
checked where it enters, trusted by the preflight's probe, and given to each CLI in the
variable it reads (a CA and a leaf for 127.0.0.1 made here with ``cryptography``)."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from fire_exp.agents.coding_agents import ClaudeCodeAgent
from fire_exp.agents.coding_agents.endpoint_check import check_endpoint
from fire_exp.agents.coding_agents.reach import ca_bundle_path, ca_placement
from fire_exp.environments.docker import DockerEnvironment
from fire_exp.errors import InputError, PreflightError


def _cert(subject: str, key: Any, issuer: x509.Name, signer: Any, *, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(signer, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A private CA and a leaf it signed for 127.0.0.1, as PEM files."""
    root = tmp_path_factory.mktemp("pki")
    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(
        ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fire-exp test CA")])
    ca = _cert("fire-exp test CA", ca_key, ca_name, ca_key, ca=True)
    leaf = _cert("127.0.0.1", leaf_key, ca_name, ca_key, ca=False)
    files = {"ca": root / "ca.pem", "cert": root / "leaf.pem", "key": root / "leaf.key"}
    files["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files["cert"].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    files["key"].write_bytes(leaf_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return files


class _Messages(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'event: message_start\ndata: {"type":"message_start"}\n\n'
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def https_endpoint(pki: dict[str, Path]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Messages)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki["cert"], pki["key"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_probe_trusts_the_agent_s_ca_bundle_and_nothing_else(
        https_endpoint: str, pki: dict[str, Path]) -> None:
    with pytest.raises(PreflightError, match=r"CERTIFICATE_VERIFY_FAILED.*agent.ca_bundle"):
        check_endpoint("claude-code", "claude-code", https_endpoint, "m", "ANTHROPIC_API_KEY",
                       None)
    agent = ClaudeCodeAgent(binary="/bin/true", base_url=https_endpoint, model="m",
                            ca_bundle=str(pki["ca"]))
    agent.preflight(DockerEnvironment.capabilities)  # passes: the CA signed the endpoint's certificate
    assert agent.ca_bundle == pki["ca"].resolve()


def test_a_ca_bundle_that_is_no_pem_file_is_refused_where_it_enters(
        tmp_path: Path, pki: dict[str, Path]) -> None:
    (tmp_path / "key-only.pem").write_bytes(pki["key"].read_bytes())
    for value, said in ((str(tmp_path / "absent.pem"), "cannot read"),
                        (str(tmp_path / "key-only.pem"), "holds no PEM certificate")):
        with pytest.raises(InputError, match=rf"ca_bundle: .*{said}"):
            ClaudeCodeAgent(binary="/bin/true", ca_bundle=value)
    assert ca_bundle_path(None, "x") is None and ca_bundle_path("", "x") is None


def test_each_cli_is_told_the_ca_in_the_variable_it_reads(pki: dict[str, Path]) -> None:
    agent_dir = "/opt/fire-exp/agent"
    for target, variable in (("codex", "CODEX_CA_CERTIFICATE"),
                             ("claude-code", "NODE_EXTRA_CA_CERTS"),
                             ("another-cli", "SSL_CERT_FILE")):
        files, env = ca_placement(pki["ca"], agent_dir, target)
        assert env == {variable: f"{agent_dir}/ca-bundle.pem"}
        assert files == {f"{agent_dir}/ca-bundle.pem": pki["ca"].read_bytes()}
