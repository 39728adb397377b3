"""A throwaway certificate authority and serving certificate for HTTPS.

Uses the ``cryptography`` package (ECDSA P-256 keys, generated in milliseconds) and falls back
to the ``openssl`` command line when it is not installed. Files are written to a directory the
caller owns; the CA certificate goes into the kubeconfig as ``certificate-authority-data``.
``load_or_generate`` keeps the files a previous run left, so a restarted server on the same
workdir is still trusted by every kubeconfig and client that holds its CA.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
from dataclasses import dataclass


@dataclass
class CertFiles:
    ca_cert: str
    ca_key: str
    cert: str
    key: str

    def ca_pem(self) -> bytes:
        with open(self.ca_cert, "rb") as f:
            return f.read()


def load_or_generate(directory: str,
                     hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> CertFiles:
    """The CA and serving certificate already in ``directory``, else new ones."""
    files = _files(directory)
    if all(os.path.exists(p) for p in (files.ca_cert, files.ca_key, files.cert, files.key)):
        return files
    return generate(directory, hosts)


def _files(directory: str) -> CertFiles:
    return CertFiles(*(os.path.join(directory, n) for n in
                       ("ca.crt", "ca.key", "apiserver.crt", "apiserver.key")))


def generate(directory: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> CertFiles:
    os.makedirs(directory, exist_ok=True)
    files = _files(directory)
    try:
        _generate_cryptography(files, hosts)
    except ImportError:
        _generate_openssl(files, hosts)
    return files


def _generate_cryptography(files: CertFiles, hosts: tuple[str, ...]) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    start = now - datetime.timedelta(hours=1)
    end = now + datetime.timedelta(days=365)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-apiserver-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def write_key(path: str, k: ec.EllipticCurvePrivateKey) -> None:
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(k.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))

    write_key(files.ca_key, ca_key)
    write_key(files.key, key)
    with open(files.ca_cert, "wb") as f:
        f.write(ca_cert.public_bytes(serialization.Encoding.PEM))
    with open(files.cert, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))


def _generate_openssl(files: CertFiles, hosts: tuple[str, ...]) -> None:
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", files.ca_key, "-out", files.ca_cert, "-days", "365",
        "-subj", "/CN=test-apiserver-ca")
    san = ",".join(("IP:" if _is_ip(h) else "DNS:") + h for h in hosts)
    csr = files.cert + ".csr"
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", files.key, "-out", csr, "-subj", "/CN=kube-apiserver")
    ext = files.cert + ".ext"
    with open(ext, "w") as f:
        f.write(f"subjectAltName={san}\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", csr, "-CA", files.ca_cert, "-CAkey", files.ca_key,
        "-CAcreateserial", "-out", files.cert, "-days", "365", "-extfile", ext)


def _is_ip(h: str) -> bool:
    try:
        ipaddress.ip_address(h)
        return True
    except ValueError:
        return False
