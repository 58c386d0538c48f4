"""Confluent Schema Registry's error table: HTTP status, error_code and message.

The codes and messages are Confluent's (io.confluent.kafka.schemaregistry.rest.exceptions.
Errors and RestExceptions); clients branch on `error_code`, some on the HTTP status.
"""

from __future__ import annotations

__all__ = ["RegistryError"]


class RegistryError(Exception):
    """An answer other than 200: `{"error_code": error_code, "message": message}`.

    The HTTP status is part of the code: a five-digit Confluent code starts with it (40401
    is a 404), a three-digit one is the status itself (409, 422).
    """

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.http_status = error_code // 100 if error_code >= 10000 else error_code
        self.error_code = error_code
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}

    # --- Confluent's named errors ---------------------------------------------------------

    @classmethod
    def bad_request(cls, message: str) -> RegistryError:
        return cls(400, message)

    @classmethod
    def unprocessable(cls, message: str) -> RegistryError:
        return cls(422, message)

    @classmethod
    def subject_not_found(cls, subject: str) -> RegistryError:
        return cls(40401, f"Subject '{subject}' not found.")

    @classmethod
    def version_not_found(cls, version: object) -> RegistryError:
        return cls(40402, f"Version {version} not found.")

    @classmethod
    def schema_not_found(cls, detail: str = "Schema not found") -> RegistryError:
        return cls(40403, detail)

    @classmethod
    def subject_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(
            40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
        )

    @classmethod
    def subject_not_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(
            40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
        )

    @classmethod
    def version_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(
            40406,
            f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to "
            "delete permanently",
        )

    @classmethod
    def version_not_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(
            40407,
            f"Subject '{subject}' Version {version} was not deleted first before being "
            "permanently deleted",
        )

    @classmethod
    def subject_compatibility_not_configured(cls, subject: str) -> RegistryError:
        return cls(
            40408, f"Subject '{subject}' does not have subject-level compatibility configured"
        )

    @classmethod
    def subject_mode_not_configured(cls, subject: str) -> RegistryError:
        return cls(40409, f"Subject '{subject}' does not have subject-level mode configured")

    @classmethod
    def incompatible(cls, subject: str, messages: list[str]) -> RegistryError:
        return cls(
            409,
            "Schema being registered is incompatible with an earlier schema for subject "
            f'"{subject}", details: [{", ".join(messages)}]',
        )

    @classmethod
    def invalid_schema(cls, detail: str) -> RegistryError:
        return cls(42201, detail)

    @classmethod
    def invalid_version(cls, version: object) -> RegistryError:
        return cls(
            42202,
            f"The specified version '{version}' is not a valid version id. Allowed values are "
            'between [1, 2^31-1] and the string "latest"',
        )

    @classmethod
    def invalid_compatibility_level(cls, level: object) -> RegistryError:
        return cls(
            42203,
            f"Invalid compatibility level. Valid values are none, backward, forward, full, "
            f"backward_transitive, forward_transitive, and full_transitive (got {level!r})",
        )

    @classmethod
    def invalid_mode(cls, mode: object) -> RegistryError:
        return cls(
            42204, f"Invalid mode. Valid values are READWRITE, READONLY, IMPORT (got {mode!r})"
        )

    @classmethod
    def operation_not_permitted(cls, detail: str) -> RegistryError:
        return cls(42205, detail)

    @classmethod
    def reference_exists(cls, detail: str) -> RegistryError:
        return cls(42206, detail)

    @classmethod
    def id_does_not_match(cls, detail: str) -> RegistryError:
        return cls(42207, detail)

    @classmethod
    def store_error(cls, detail: str) -> RegistryError:
        return cls(50001, f"Error in the backend data store - {detail}")
