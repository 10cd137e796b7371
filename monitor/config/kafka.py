"""The `kafka` section: brokers, topics, consumer settings and the connection's security.

Secrets (the SASL password, the TLS key's passphrase) are never written in the file: the
config names an environment variable (`password_env`) or a file (`password_file`, e.g. a
mounted Kubernetes secret) and the value is read once, at start, into a `Secret`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from monitor.declare import read_settings
from monitor.kafka.settings import (
    PROTOCOLS,
    SASL_MECHANISMS,
    KafkaConfig,
    KafkaSecurity,
    SaslConfig,
    SslConfig,
)
from monitor.sections import (
    ConfigSection,
    as_bool,
    as_choice,
    as_path,
    as_str,
)
from monitor.values import Secret

__all__ = ["read_kafka"]


def read_kafka(section: ConfigSection, environ: Mapping[str, str], base: Path) -> KafkaConfig:
    """The `kafka` section: its declared keys (`monitor.kafka.settings`), and `security`,
    whose secrets come from `environ` or files (relative paths from `base`)."""
    security = _read_security(section.section("security"), environ, base)
    return read_settings(KafkaConfig, section, security=security)


def _read_security(section: ConfigSection, environ: Mapping[str, str], base: Path) -> KafkaSecurity:
    protocol = section.get("protocol", as_choice(*PROTOCOLS), "PLAINTEXT")
    sasl_section = section.section("sasl")
    ssl_section = section.section("ssl")
    sasl = _read_sasl(sasl_section, environ, base) if section.has("sasl") else None
    ssl = _read_ssl(ssl_section, environ, base)
    section.finish()
    if protocol.startswith("SASL_") and sasl is None:
        raise section.error("sasl", f"protocol {protocol} needs sasl.mechanism and credentials")
    if sasl is not None and not protocol.startswith("SASL_"):
        raise section.error("sasl", f"is set but protocol {protocol} does not use SASL")
    uses_tls = protocol in ("SSL", "SASL_SSL")
    if not uses_tls and (ssl.cafile or ssl.certfile or ssl.keyfile):
        raise section.error("ssl", f"files are set but protocol {protocol} does not use TLS")
    return KafkaSecurity(protocol=protocol, sasl=sasl, ssl=ssl)


def _read_sasl(section: ConfigSection, environ: Mapping[str, str], base: Path) -> SaslConfig:
    mechanism = section.get("mechanism", as_choice(*SASL_MECHANISMS))
    username = section.get("username", as_str)
    password = read_secret(section, "password", environ, base)
    section.finish()
    if password is None:
        raise section.error("password_env", "SASL needs password_env or password_file")
    return SaslConfig(mechanism=mechanism, username=username, password=password)


def _read_ssl(section: ConfigSection, environ: Mapping[str, str], base: Path) -> SslConfig:
    ssl = SslConfig(
        cafile=read_path(section, "cafile", base),
        certfile=read_path(section, "certfile", base),
        keyfile=read_path(section, "keyfile", base),
        key_password=read_secret(section, "key_password", environ, base),
        check_hostname=section.get("check_hostname", as_bool, True),
    )
    section.finish()
    if (ssl.certfile is None) != (ssl.keyfile is None):
        missing = "keyfile" if ssl.keyfile is None else "certfile"
        raise section.error(missing, "client TLS (mTLS) needs both certfile and keyfile")
    if ssl.key_password is not None and ssl.keyfile is None:
        raise section.error("key_password_env", "a key password is set but no keyfile")
    return ssl


def read_path(section: ConfigSection, name: str, base: Path) -> Path | None:
    """An optional path to an existing file, relative to `base` unless absolute."""
    relative = section.get(name, as_path, None)
    if relative is None:
        return None
    path = base / relative
    if not path.is_file():
        raise section.error(name, f"file not found: {path}")
    return path


def read_secret(
    section: ConfigSection, stem: str, environ: Mapping[str, str], base: Path
) -> Secret | None:
    """The secret `<stem>_env` (a variable's name) or `<stem>_file` points to, if either is set.

    An inline `<stem>` is refused: plaintext secrets in a config file end up in git and in
    ConfigMaps. A trailing newline of a secret file (as `echo` writes) is not part of it.
    """
    if section.has(stem):
        raise section.error(stem, f"inline secrets are refused; use {stem}_env or {stem}_file")
    section.get(stem, as_str, None)  # mark as known, so it is not reported as unknown
    variable = section.get(f"{stem}_env", as_str, None)
    file = read_path(section, f"{stem}_file", base)
    if variable is not None and file is not None:
        raise section.error(f"{stem}_env", f"set {stem}_env or {stem}_file, not both")
    if variable is not None:
        value = environ.get(variable, "")
        if not value:
            raise section.error(f"{stem}_env", f"environment variable {variable} is not set")
        return Secret(value, env=variable)
    if file is not None:
        try:
            value = file.read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as error:
            raise section.error(f"{stem}_file", f"cannot read {file}: {error}") from error
        if not value:
            raise section.error(f"{stem}_file", f"{file} is empty")
        return Secret(value, file=file)
    return None
