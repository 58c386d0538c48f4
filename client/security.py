"""How kmock's client secures its connection: TLS through Python's `ssl`, SASL PLAIN and
SCRAM-SHA-256/512, configured with the keys of a Kafka client's properties file (what
`kafka-acls --command-config client.properties` reads):

    security.protocol=SASL_SSL                  PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl.mechanism=SCRAM-SHA-512                PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="admin" password="admin-secret";
    ssl.truststore.location=/certs/ca.pem       (PEM; or ssl.truststore.certificates inline)
    ssl.keystore.location=/certs/client.pem     (PEM chain + key; or ssl.keystore.certificate.chain
                                                 and ssl.keystore.key inline; ssl.key.password)
    ssl.endpoint.identification.algorithm=      (empty: no host name check; default https)

Stores are PEM only, as on kmock's broker (broker.security.tls): ssl.*.type JKS or PKCS12 is
refused by name. Other keys of the file (client.id, retries, ...) are accepted and unused,
as Kafka's tools leave unused keys alone. Without a truststore the system's CAs are used,
as a Java client uses the JVM's. A bad file raises ValueError naming the key, never a
password.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "MECHANISMS",
    "ClientSecurity",
    "parse_jaas",
    "read_properties",
]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# JAAS login modules -> the mechanisms they serve (Kafka's PlainLoginModule, ScramLoginModule).
_LOGIN_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """The security settings of one client connection. Passwords stay out of repr()."""

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None  # ssl.truststore.location
    ssl_cadata: str | None = field(default=None, repr=False)  # ssl.truststore.certificates
    ssl_keystore: str | None = None  # ssl.keystore.location: chain and key in one PEM file
    ssl_keystore_pem: str | None = field(default=None, repr=False)  # inline chain + key
    ssl_key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext:
        """The client-side SSLContext.

        Raises:
          ValueError: a truststore or keystore that cannot be read, naming its setting.
        """
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        ctx.check_hostname = self.check_hostname
        try:
            if self.ssl_cafile or self.ssl_cadata:
                ctx.load_verify_locations(cafile=self.ssl_cafile, cadata=self.ssl_cadata)
        except (ssl.SSLError, OSError) as e:
            name = "location" if self.ssl_cafile else "certificates"
            raise ValueError(
                f"ssl.truststore.{name}: not readable PEM certificates: {_why(e)}"
            ) from None
        if self.ssl_keystore:
            try:
                ctx.load_cert_chain(self.ssl_keystore, password=self.ssl_key_password)
            except (ssl.SSLError, OSError) as e:
                raise ValueError(
                    f"ssl.keystore.location: {self.ssl_keystore} is not a PEM certificate "
                    f"chain with its key (or ssl.key.password is wrong): {_why(e)}"
                ) from None
        elif self.ssl_keystore_pem:
            # ssl loads a chain only from a file: a private temporary one.
            fd, path = tempfile.mkstemp(prefix="kmock-client-", suffix=".pem")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(self.ssl_keystore_pem)
                ctx.load_cert_chain(path, password=self.ssl_key_password)
            except ssl.SSLError as e:
                raise ValueError(
                    "ssl.keystore.certificate.chain/ssl.keystore.key: not a PEM certificate "
                    f"chain and matching key: {_why(e)}"
                ) from None
            finally:
                os.unlink(path)
        return ctx

    @classmethod
    def from_properties(cls, props: Mapping[str, str], where: str = "") -> ClientSecurity:
        """The settings of a Kafka client properties file (see the module docstring).

        Raises:
          ValueError: "<where>: <key>: what is wrong" (never a password).
        """
        prefix = f"{where}: " if where else ""

        def bad(key: str, why: str) -> ValueError:
            return ValueError(f"{prefix}{key}: {why}")

        protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in PROTOCOLS:
            raise bad("security.protocol", f"{protocol!r} is not one of {', '.join(PROTOCOLS)}")
        for kind in ("keystore", "truststore"):
            store_type = props.get(f"ssl.{kind}.type", "PEM").strip().upper()
            if store_type != "PEM":
                raise bad(f"ssl.{kind}.type", f"kmock's client reads PEM only, not {store_type}")
        chain = props.get("ssl.keystore.certificate.chain", "").strip()
        key = props.get("ssl.keystore.key", "").strip()
        if bool(chain) != bool(key):
            raise bad("ssl.keystore.certificate.chain", "goes together with ssl.keystore.key")
        algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
        if algorithm not in ("https", ""):
            raise bad("ssl.endpoint.identification.algorithm", "is https or empty")
        mechanism = username = password = None
        if protocol.startswith("SASL_"):
            mechanism, username, password = _sasl(props, bad)
        return cls(
            security_protocol=protocol,
            sasl_mechanism=mechanism,
            username=username,
            password=password,
            ssl_cafile=props.get("ssl.truststore.location", "").strip() or None,
            ssl_cadata=props.get("ssl.truststore.certificates", "").strip() or None,
            ssl_keystore=props.get("ssl.keystore.location", "").strip() or None,
            ssl_keystore_pem=f"{chain}\n{key}\n" if chain else None,
            ssl_key_password=props.get("ssl.key.password") or None,
            check_hostname=algorithm == "https",
        )


def _sasl(props: Mapping[str, str], bad: Callable[[str, str], ValueError]) -> tuple[str, str, str]:
    jaas = props.get("sasl.jaas.config", "").strip()
    if not jaas:
        raise bad(
            "sasl.jaas.config",
            "missing: a SASL protocol needs org.apache.kafka.common.security.plain."
            'PlainLoginModule (or ...scram.ScramLoginModule) required username="..." '
            'password="...";',
        )
    try:
        module, options = parse_jaas(jaas)
    except ValueError as e:
        raise bad("sasl.jaas.config", str(e)) from None
    served = _LOGIN_MODULES.get(module)
    if served is None:
        known = ", ".join(m.rsplit(".", 1)[1] for m in _LOGIN_MODULES)
        raise bad("sasl.jaas.config", f"login module {module} is not one of {known}")
    # Kafka's default is GSSAPI, which this client does not speak; PLAIN is the only
    # mechanism a PlainLoginModule can mean, so it is taken as given.
    mechanism = props.get("sasl.mechanism", "").strip().upper() or (
        "PLAIN" if served == ("PLAIN",) else ""
    )
    if mechanism not in MECHANISMS:
        raise bad(
            "sasl.mechanism",
            f"{mechanism or 'GSSAPI (the default)'} is not one kmock's client speaks: "
            f"{', '.join(MECHANISMS)}",
        )
    if mechanism not in served:
        raise bad("sasl.jaas.config", f"{module.rsplit('.', 1)[1]} does not serve {mechanism}")
    for option in ("username", "password"):
        if option not in options:
            raise bad("sasl.jaas.config", f"no {option}=... option")
    return mechanism, options["username"], options["password"]


# The JAAS grammar Kafka's JaasConfig parses: `<LoginModuleClass> <flag> key=value ... ;`
# with values quoted ("...", backslash escapes) or bare.
_JAAS_HEAD = re.compile(r"\s*([A-Za-z_$][\w$.]*)\s+(required|requisite|sufficient|optional)\b")
_JAAS_OPTION = re.compile(r'\s*([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """One JAAS login module entry -> (login module class, {option: value}).

    Raises:
      ValueError: not the form `<class> required key="value" ...;` (the message never
        quotes a value).
    """
    head = _JAAS_HEAD.match(text)
    if head is None:
        raise ValueError('expected "<LoginModule class> required key=\\"value\\" ...;"')
    options: dict[str, str] = {}
    pos = head.end()
    while True:
        m = _JAAS_OPTION.match(text, pos)
        if m is None:
            break
        value = m.group(2) if m.group(2) is not None else m.group(3)
        options[m.group(1)] = re.sub(r"\\(.)", r"\1", value)
        pos = m.end()
    rest = text[pos:].strip()
    if rest != ";":
        where = "no ';' at the end" if not rest else f"cannot read it from character {pos}"
        raise ValueError(f"{where} (one login module, options key=\"value\", then ';')")
    return head.group(1), options


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def read_properties(text: str) -> dict[str, str]:
    """A Java properties file as java.util.Properties.load reads it: `key=value`,
    `key: value` or `key value`; `#`/`!` comments; a line ending in an odd number of
    backslashes goes on with the next (its leading blanks dropped); escapes \\t \\n \\r \\f
    \\uXXXX, and a backslash before any other character is that character."""
    lines = text.splitlines()
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if _continues(line):
            line = line[:-1]
        key, value = _split_logical(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_logical(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t\f":
            break
        j += 1
    rest = line[j:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return line[:j], rest


def _unescape(s: str) -> str:
    out = []
    j = 0
    while j < len(s):
        c = s[j]
        if c == "\\" and j + 1 < len(s):
            n = s[j + 1]
            if n == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", s[j + 2 : j + 6]):
                out.append(chr(int(s[j + 2 : j + 6], 16)))
                j += 6
                continue
            out.append(_ESCAPES.get(n, n))
            j += 2
            continue
        out.append(c)
        j += 1
    return "".join(out)


def _why(e: Exception) -> str:
    if isinstance(e, ssl.SSLError):
        return str(e.reason or e)
    if isinstance(e, OSError):
        return e.strerror or str(e)
    return str(e)
