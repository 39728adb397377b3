"""The webhook server's certificates: a self-signed CA and a serving certificate, kept in a
Secret or in the cert directory.

Corresponds to upstream ``pkg/webhook/util/generator`` (self-signed CA, serving cert for the
service DNS name, validity check) and ``pkg/webhook/util/writer`` (Secret writer and file
writer; file names ``ca-cert.pem``, ``ca-key.pem``, ``cert.pem``, ``key.pem``, with
``tls.crt``/``tls.key`` also written and accepted). The Secret is created by whichever replica
gets there first; the others read it back, so every replica serves with the same CA.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pkg.client import ApiError, Client
from pkg.client.resources import SECRETS

CA_CERT = "ca-cert.pem"
CA_KEY = "ca-key.pem"
SERVER_CERT = "cert.pem"
SERVER_KEY = "key.pem"
SERVER_CERT2 = "tls.crt"
SERVER_KEY2 = "tls.key"
# Certificates are good for ten years (upstream's generator); renewed when less than
# this is left, or when they no longer name the host.
VALIDITY = datetime.timedelta(days=3650)
RENEW_BEFORE = datetime.timedelta(days=30)


@dataclass(frozen=True, slots=True)
class Artifacts:
    """PEM bytes of the CA and the serving pair."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    def ca_bundle(self) -> str:
        """The CA as a webhook configuration's ``caBundle`` (base64 of the PEM)."""
        return base64.b64encode(self.ca_cert).decode()


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def generate(dns_name: str) -> Artifacts:
    """A new CA and a serving certificate for ``dns_name`` (an IP address gets an IP SAN)."""
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(hours=1), now + VALIDITY
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook-cert-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(
              digital_signature=True, key_cert_sign=True, crl_sign=True,
              content_commitment=False, key_encipherment=True, data_encipherment=False,
              key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    try:
        san: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(dns_name))
    except ValueError:
        san = x509.DNSName(dns_name)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_name)]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([san]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return Artifacts(ca.public_bytes(serialization.Encoding.PEM), _pem_key(ca_key),
                     cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def valid_for(artifacts: Artifacts | None, dns_name: str) -> bool:
    """Whether the serving certificate parses, is signed by the CA, names ``dns_name`` and
    is not about to expire (upstream ``ValidCert``)."""
    if artifacts is None:
        return False
    try:
        ca = x509.load_pem_x509_certificate(artifacts.ca_cert)
        cert = x509.load_pem_x509_certificate(artifacts.cert)
        serialization.load_pem_private_key(artifacts.key, None)
        cert.verify_directly_issued_by(ca)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, TypeError, x509.ExtensionNotFound):
        return False
    names = set(sans.get_values_for_type(x509.DNSName))
    names |= {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    left = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    return dns_name in names and left > RENEW_BEFORE


# --- storage ---------------------------------------------------------------------------------


def _from_files(files: dict[str, bytes]) -> Artifacts | None:
    cert = files.get(SERVER_CERT) or files.get(SERVER_CERT2)
    key = files.get(SERVER_KEY) or files.get(SERVER_KEY2)
    ca_cert, ca_key = files.get(CA_CERT), files.get(CA_KEY)
    if not (cert and key and ca_cert):
        return None
    return Artifacts(ca_cert, ca_key or b"", cert, key)


def _to_files(artifacts: Artifacts) -> dict[str, bytes]:
    return {CA_CERT: artifacts.ca_cert, CA_KEY: artifacts.ca_key,
            SERVER_CERT: artifacts.cert, SERVER_KEY: artifacts.key,
            SERVER_CERT2: artifacts.cert, SERVER_KEY2: artifacts.key}


def read_dir(cert_dir: str) -> Artifacts | None:
    """The certificates in ``cert_dir`` (a mounted Secret or a previous run), if complete."""
    files: dict[str, bytes] = {}
    for name in (CA_CERT, CA_KEY, SERVER_CERT, SERVER_KEY, SERVER_CERT2, SERVER_KEY2):
        try:
            with open(os.path.join(cert_dir, name), "rb") as f:
                files[name] = f.read()
        except OSError:
            continue
    return _from_files(files)


def write_dir(cert_dir: str, artifacts: Artifacts) -> None:
    """Write the files atomically (replace) so a reader never sees half a pair."""
    os.makedirs(cert_dir, exist_ok=True)
    for name, data in _to_files(artifacts).items():
        path = os.path.join(cert_dir, name)
        current = None
        try:
            with open(path, "rb") as f:
                current = f.read()
        except OSError:
            pass
        if current == data:
            continue
        tmp = f"{path}.tmp"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(data)
        os.replace(tmp, path)


def _secret_artifacts(secret: dict) -> Artifacts | None:
    data = secret.get("data") or {}
    try:
        files = {k: base64.b64decode(v) for k, v in data.items() if isinstance(v, str)}
    except ValueError:
        return None
    return _from_files(files)


def ensure_secret(client: Client, namespace: str, name: str, dns_name: str) -> Artifacts:
    """The certificates of Secret ``namespace/name``, (re)generated when missing or invalid.

    Two replicas racing to create it: the loser reads the winner's Secret back.
    """
    try:
        secret = client.get(SECRETS, name, namespace)
    except ApiError as e:
        if e.status != 404:
            raise
        secret = None
    current = _secret_artifacts(secret) if secret is not None else None
    if valid_for(current, dns_name):
        assert current is not None
        return current
    fresh = generate(dns_name)
    data = {k: base64.b64encode(v).decode() for k, v in _to_files(fresh).items()}
    if secret is None:
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": name, "namespace": namespace}, "data": data}
        try:
            client.create(SECRETS, body, namespace)
        except ApiError as e:
            if e.status != 409:
                raise
            return ensure_secret(client, namespace, name, dns_name)
        return fresh
    secret = {**secret, "data": data}
    try:
        client.update(SECRETS, secret, namespace)
    except ApiError as e:
        if e.status != 409:
            raise
        return ensure_secret(client, namespace, name, dns_name)
    return fresh


def ensure_dir(cert_dir: str, dns_name: str) -> Artifacts:
    """The file writer: certificates from ``cert_dir``, regenerated there when invalid."""
    current = read_dir(cert_dir)
    if valid_for(current, dns_name):
        assert current is not None
        return current
    fresh = generate(dns_name)
    write_dir(cert_dir, fresh)
    return fresh


__all__ = ["Artifacts", "ensure_dir", "ensure_secret", "generate", "read_dir", "valid_for",
           "write_dir"]
