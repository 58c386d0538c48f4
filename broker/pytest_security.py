"""The security options of the kmock pytest fixtures (broker.pytest_plugin): a broker on a
TLS or SASL listener, and the settings each client needs to reach it.

    @pytest.mark.kmock_config(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                              users={"alice": "secret"}, ssl_client_auth="required")
    def test_secured(kmock):
        KafkaProducer(**kmock.kafka_python_config())           # kafka-python kwargs
        Producer(kmock.confluent_config())                      # confluent-kafka / librdkafka
        AIOKafkaProducer(**kmock.aiokafka_config())             # aiokafka, with an SSLContext
        kmock.confluent_config(password="wrong")                # a user's settings, overridden
        kmock.certs.ca, kmock.certs.client_cert, kmock.certs.client_key   # PEM paths
        kmock.client_properties()   # Kafka's client.properties keys (kmock --command-config)

    KmockBroker(data_dir, security_protocol="SSL", ssl_client_auth="required")

security_protocol is PLAINTEXT (the default), SSL, SASL_PLAINTEXT or SASL_SSL: the broker's
one listener is named after it. With TLS, `kmock certs`'s throwaway CA, server and client
certificates (broker.security.certs) are written beside the data directory and configured
as ssl.keystore.location and ssl.truststore.location; ssl_client_auth (none, requested,
required) is the listener's ssl.client.auth, and the client settings carry the client
certificate (principal User:CN=client,O=kmock) unless it is none. With SASL, sasl_mechanism
(PLAIN by default, SCRAM-SHA-256, SCRAM-SHA-512) is the one sasl.enabled.mechanisms, and
every one of `users` (default {"kmock": "kmock-secret"}) can log in with each of the three:
in the listener's plain.sasl.jaas.config, and in the data directory's SCRAM store as
`kmock serve --add-scram` writes it. The client settings are the first user's unless asked.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["OPTIONS", "Certs", "FixtureSecurity", "parse_option", "properties_text"]

# The fixture options of this module (marker keywords and KmockBroker keywords).
OPTIONS = ("security_protocol", "sasl_mechanism", "users", "ssl_client_auth")
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_USERS = {"kmock": "kmock-secret"}
CLIENT_AUTH = ("none", "requested", "required")


def parse_option(key: str, value: str) -> Any:
    """One of OPTIONS as an ini `kmock_config` line or --kmock-config flag gives it: users
    as `name:password` pairs separated by commas, the others as they are.

    Raises:
      ValueError: a users value that is not such pairs, named.
    """
    if key != "users":
        return value
    users = {}
    for pair in value.split(","):
        name, sep, password = pair.strip().partition(":")
        if not sep or not name.strip():
            raise ValueError(f"kmock users={value!r}: name:password pairs separated by commas")
        users[name.strip()] = password
    return users


class Certs(NamedTuple):
    """PEM files written by `kmock certs` (broker.security.certs.write_certs)."""

    ca: Path  # the CA: every client's truststore
    server: Path  # the broker's chain and key (ssl.keystore.location)
    client_cert: Path  # principal User:CN=client,O=kmock
    client_key: Path
    client_keystore: Path  # client_cert and client_key in one file (ssl.keystore.location)


class _ClientKeys(NamedTuple):
    """One client library's names for the same connection settings."""

    bootstrap: str
    protocol: str
    ca: str
    cert: str
    key: str
    mechanism: str
    user: str
    password: str


_KAFKA_PYTHON = _ClientKeys(
    "bootstrap_servers",
    "security_protocol",
    "ssl_cafile",
    "ssl_certfile",
    "ssl_keyfile",
    "sasl_mechanism",
    "sasl_plain_username",
    "sasl_plain_password",
)
_CONFLUENT = _ClientKeys(  # librdkafka
    "bootstrap.servers",
    "security.protocol",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
)


@dataclass(frozen=True)
class FixtureSecurity:
    """How the fixture's broker is secured, and the client settings that follow."""

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    users: Mapping[str, str] = field(default_factory=dict, repr=False)
    ssl_client_auth: str = "none"
    certs: Certs | None = None

    @classmethod
    def prepare(
        cls,
        data_dir: Path,
        *,
        security_protocol: str = "PLAINTEXT",
        sasl_mechanism: str | None = None,
        users: Mapping[str, str] | None = None,
        ssl_client_auth: str | None = None,
    ) -> tuple[FixtureSecurity, dict[str, Any]]:
        """Check the options, write certificates and SCRAM users; returns the security and
        the broker settings it needs.

        Raises:
          ValueError: an option that cannot be used, named as the fixture takes it.
        """
        protocol = str(security_protocol).upper()
        if protocol not in PROTOCOLS:
            raise ValueError(f"kmock security_protocol={security_protocol!r}: one of {PROTOCOLS}")
        tls, sasl = protocol in ("SSL", "SASL_SSL"), protocol.startswith("SASL_")
        if ssl_client_auth is not None and not tls:
            raise ValueError("kmock ssl_client_auth needs security_protocol SSL or SASL_SSL")
        auth = (ssl_client_auth or "none").lower()
        if auth not in CLIENT_AUTH:
            raise ValueError(f"kmock ssl_client_auth={ssl_client_auth!r}: one of {CLIENT_AUTH}")
        if (sasl_mechanism is not None or users is not None) and not sasl:
            raise ValueError(
                "kmock sasl_mechanism and users need security_protocol SASL_PLAINTEXT or SASL_SSL"
            )
        mechanism = (sasl_mechanism or "PLAIN").upper() if sasl else None
        if mechanism is not None and mechanism not in MECHANISMS:
            raise ValueError(f"kmock sasl_mechanism={sasl_mechanism!r}: one of {MECHANISMS}")
        users = dict(DEFAULT_USERS if users is None else users) if sasl else {}
        if sasl and not users:
            raise ValueError("kmock users: at least one {name: password}")
        settings: dict[str, Any] = {"listeners": f"{protocol}://127.0.0.1:0"}
        certs = None
        if tls:
            from broker.security.certs import write_certs

            written = write_certs(data_dir.with_name(f"{data_dir.name}-certs"))
            certs = Certs(**written)
            settings["ssl.keystore.location"] = str(certs.server)
            settings["ssl.truststore.location"] = str(certs.ca)
            settings["ssl.client.auth"] = auth
        if sasl:
            _add_users(data_dir, users)
            settings["sasl.enabled.mechanisms"] = mechanism
            settings[f"listener.name.{protocol.lower()}.plain.sasl.jaas.config"] = _plain_jaas(
                users
            )
        return cls(protocol, mechanism, users, auth, certs), settings

    # --- client settings --------------------------------------------------------------

    def _login(self, user: str | None, password: str | None) -> tuple[str, str]:
        name = user if user is not None else next(iter(self.users))
        secret = password if password is not None else self.users.get(name, "")
        return name, secret

    @property
    def _tls(self) -> bool:
        return self.certs is not None

    @property
    def _client_cert(self) -> bool:
        return self.certs is not None and self.ssl_client_auth != "none"

    def _client_conf(
        self, keys: _ClientKeys, bootstrap: str, user: str | None, password: str | None
    ) -> dict[str, Any]:
        conf: dict[str, Any] = {
            keys.bootstrap: bootstrap,
            keys.protocol: self.security_protocol,
        }
        if self.certs is not None:
            conf[keys.ca] = str(self.certs.ca)
            if self._client_cert:
                conf[keys.cert] = str(self.certs.client_cert)
                conf[keys.key] = str(self.certs.client_key)
        if self.sasl_mechanism:
            name, secret = self._login(user, password)
            conf[keys.mechanism] = self.sasl_mechanism
            conf[keys.user] = name
            conf[keys.password] = secret
        return conf

    def kafka_python(
        self, bootstrap: str, user: str | None = None, password: str | None = None
    ) -> dict[str, Any]:
        return self._client_conf(_KAFKA_PYTHON, bootstrap, user, password)

    def confluent(
        self, bootstrap: str, user: str | None = None, password: str | None = None
    ) -> dict[str, Any]:
        return self._client_conf(_CONFLUENT, bootstrap, user, password)

    def ssl_context(self) -> ssl.SSLContext | None:
        """A client SSLContext trusting the CA (with the client certificate if used)."""
        if self.certs is None:
            return None
        ctx = ssl.create_default_context(cafile=str(self.certs.ca))
        if self._client_cert:
            ctx.load_cert_chain(self.certs.client_cert, self.certs.client_key)
        return ctx

    def aiokafka(
        self, bootstrap: str, user: str | None = None, password: str | None = None
    ) -> dict[str, Any]:
        conf = self.kafka_python(bootstrap, user, password)
        for key in (_KAFKA_PYTHON.ca, _KAFKA_PYTHON.cert, _KAFKA_PYTHON.key):
            conf.pop(key, None)
        if self.certs is not None:
            conf["ssl_context"] = self.ssl_context()
        return conf

    def properties(self, user: str | None = None, password: str | None = None) -> dict[str, str]:
        """Kafka's client configuration keys (a client.properties, for Java tools and for
        `kmock ... --command-config`)."""
        props = {"security.protocol": self.security_protocol}
        if self.certs is not None:
            props["ssl.truststore.type"] = "PEM"
            props["ssl.truststore.location"] = str(self.certs.ca)
            if self._client_cert:
                props["ssl.keystore.type"] = "PEM"
                props["ssl.keystore.location"] = str(self.certs.client_keystore)
        if self.sasl_mechanism:
            name, secret = self._login(user, password)
            module = (
                "org.apache.kafka.common.security.plain.PlainLoginModule"
                if self.sasl_mechanism == "PLAIN"
                else "org.apache.kafka.common.security.scram.ScramLoginModule"
            )
            props["sasl.mechanism"] = self.sasl_mechanism
            props["sasl.jaas.config"] = (
                f'{module} required username="{_quote(name)}" password="{_quote(secret)}";'
            )
        return props


def properties_text(props: Mapping[str, str]) -> str:
    """`key=value` lines that java.util.Properties (and client.security) read back as given."""

    def escape(value: str) -> str:
        out = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        return "\\" + out if out[:1] in (" ", "\t") else out

    return "".join(f"{key}={escape(value)}\n" for key, value in props.items())


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _plain_jaas(users: Mapping[str, str]) -> str:
    entries = " ".join(f'user_{name}="{_quote(pw)}"' for name, pw in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {entries};"


def _add_users(data_dir: Path, users: Mapping[str, str]) -> None:
    """Every user for SCRAM-SHA-256 and SCRAM-SHA-512, in the data directory's store."""
    from broker.security.authenticator import STORE_FILE
    from broker.security.scram import HASHES, ScramStore, make_credential

    data_dir.mkdir(parents=True, exist_ok=True)
    store = ScramStore(data_dir / STORE_FILE)
    for name, password in users.items():
        for mechanism in HASHES:
            store.set(mechanism, name, make_credential(mechanism, password))
    store.save()
