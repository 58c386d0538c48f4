"""The security settings (broker.security), under Kafka's names, and their per-listener
prefixes. A module of its own so that broker.config, which reads it, does not import
broker.security.

Kafka lets every ssl.* and sasl.* setting be given for one listener only, as
`listener.name.<listener name in lower case>.<setting>`, and takes the JAAS configuration
of a SASL mechanism only that way: `listener.name.sasl_ssl.plain.sasl.jaas.config`
(KafkaConfig / ListenerName.configPrefix). `listener_setting` reads a setting for a listener,
the prefixed value winning.

These are plain dicts (the fields of broker.config.Setting) so that broker.config, which
builds SETTINGS from them, is the only module importing the other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SECURITY_SETTINGS", "listener_prefixed", "listener_setting"]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def _s(name: str, type: str, default: Any, doc: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "type": type, "default": default, "doc": doc, **kw}


SECURITY_SETTINGS: list[dict[str, Any]] = [
    _s(
        "ssl.keystore.type",
        "string",
        "PEM",
        "The keystore format: kmock reads PEM only.",
        kafka_default="JKS",
        choices=("PEM",),
    ),
    _s(
        "ssl.keystore.location",
        "string",
        None,
        "A PEM file holding the server's certificate chain and private key.",
    ),
    _s(
        "ssl.keystore.certificate.chain",
        "string",
        None,
        "The server's certificate chain, inline PEM (instead of ssl.keystore.location).",
    ),
    _s(
        "ssl.keystore.key",
        "string",
        None,
        "The server's private key, inline PEM (with ssl.keystore.certificate.chain).",
        sensitive=True,
    ),
    _s("ssl.key.password", "string", None, "The password of the private key.", sensitive=True),
    _s(
        "ssl.keystore.password",
        "string",
        None,
        "Accepted as Kafka does; a PEM keystore has no store password.",
        sensitive=True,
        acted_on=False,
    ),
    _s(
        "ssl.truststore.type",
        "string",
        "PEM",
        "The truststore format: kmock reads PEM only.",
        kafka_default="JKS",
        choices=("PEM",),
    ),
    _s(
        "ssl.truststore.location",
        "string",
        None,
        "A PEM file of the CA certificates that client certificates are checked against.",
    ),
    _s(
        "ssl.truststore.certificates",
        "string",
        None,
        "The CA certificates, inline PEM (instead of ssl.truststore.location).",
    ),
    _s(
        "ssl.truststore.password",
        "string",
        None,
        "Accepted as Kafka does; a PEM truststore has no password.",
        sensitive=True,
        acted_on=False,
    ),
    _s(
        "ssl.client.auth",
        "string",
        "none",
        "Client certificates: none, requested (checked if sent) or required (mTLS). The "
        "principal of a client with a certificate is User:<subject DN>.",
        choices=("none", "requested", "required"),
    ),
    _s(
        "ssl.enabled.protocols",
        "list",
        "TLSv1.2,TLSv1.3",
        "The TLS versions the listeners accept.",
    ),
    _s(
        "sasl.enabled.mechanisms",
        "list",
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "The SASL mechanisms of the SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
        "OAUTHBEARER. PLAIN users come from listener.name.<name>.plain.sasl.jaas.config "
        '(user_<name>="<password>"), SCRAM users from kmock serve --add-scram or '
        "AlterUserScramCredentials.",
        kafka_default="GSSAPI",
    ),
    _s(
        "connection.failed.authentication.delay.ms",
        "int",
        100,
        "How long a failed authentication waits before its answer and the close.",
        min_value=0,
    ),
    _s(
        "sasl.server.max.receive.size",
        "int",
        524288,
        "The largest SASL frame accepted before authentication.",
        min_value=1,
    ),
    _s(
        "authorizer.class.name",
        "string",
        "",
        "Set (to Kafka's StandardAuthorizer class name, or any value) to check requests "
        "against the ACLs (CreateAcls and DeleteAcls manage them); empty: no checks.",
    ),
    _s(
        "super.users",
        "string",
        None,
        "Principals allowed everything, ';'-separated: User:admin;User:CN=client,O=kmock.",
    ),
    _s(
        "allow.everyone.if.no.acl.found",
        "boolean",
        False,
        "With an authorizer: whether a resource without any ACL is open to all.",
    ),
    _s(
        "connections.max.reauth.ms",
        "long",
        0,
        "SASL sessions end after this long (0: never): clients re-authenticate on the "
        "connection before then (KIP-368), or it is closed at their next request.",
        min_value=0,
    ),
]

# listener.name.<listener>.<setting> and listener.name.<listener>.<mechanism>.sasl.jaas.config
_PREFIXED = re.compile(r"^listener\.name\.([a-z0-9_\-]+)\.(.+)$")
_JAAS = re.compile(r"^(plain|scram-sha-256|scram-sha-512|oauthbearer)\.sasl\.jaas\.config$")
_JAAS_SETTING = {
    "name": "sasl.jaas.config",
    "type": "string",
    "default": None,
    "doc": "JAAS configuration of one mechanism on one listener.",
    "sensitive": True,
}


def listener_prefixed(name: str, settings: Mapping[str, Any]) -> Any:
    """The setting that `name`, a listener-prefixed name, configures; None if it is not one
    (the caller reports the unknown name). `settings` is broker.config.SETTINGS."""
    m = _PREFIXED.match(name)
    if m is None:
        return None
    rest = m.group(2)
    if _JAAS.match(rest):
        return settings["sasl.jaas.config"]
    if rest.startswith(("ssl.", "sasl.")) and rest in settings:
        return settings[rest]
    return None


SECURITY_SETTINGS.append(_JAAS_SETTING)


def listener_setting(config: Any, listener: str, name: str) -> Any:
    """Setting `name` for `listener`: listener.name.<listener>.<name> if given, else `name`."""
    prefixed = f"listener.name.{listener.lower()}.{name}"
    if prefixed in config.values:
        return config.values[prefixed]
    return config.values.get(name)
