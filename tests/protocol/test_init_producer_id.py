from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = InitProducerIdRequest(
    transactional_id="txn-1", transaction_timeout_ms=60000, producer_id=4000, producer_epoch=3
)

RESPONSE = InitProducerIdResponse(
    throttle_time_ms=5, error_code=0, producer_id=4000, producer_epoch=4
)


def test_versions():
    assert InitProducerIdRequest.VERSIONS == InitProducerIdResponse.VERSIONS == range(0, 6)
    assert InitProducerIdRequest.FLEXIBLE_FROM == InitProducerIdResponse.FLEXIBLE_FROM == 2


@pytest.mark.parametrize("version", InitProducerIdRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", InitProducerIdRequest.VERSIONS)
def test_idempotent_request_without_transactional_id_roundtrip(version):
    assert_roundtrip(
        InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), version
    )


@pytest.mark.parametrize("version", InitProducerIdResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


def test_golden_kafka_python_v0():
    assert decode_golden(InitProducerIdRequest, "init_producer_id_v0.hex") == (
        0,
        InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000),
    )


def test_golden_kafka_python_v2():
    assert decode_golden(InitProducerIdRequest, "init_producer_id_v2.hex") == (
        2,
        InitProducerIdRequest(transactional_id="txn-1", transaction_timeout_ms=60000),
    )


def test_golden_kafka_python_v5():
    assert decode_golden(InitProducerIdRequest, "init_producer_id_v5.hex") == (
        5,
        InitProducerIdRequest(
            transactional_id="txn-1",
            transaction_timeout_ms=60000,
            producer_id=4000,
            producer_epoch=3,
        ),
    )


@pytest.mark.parametrize("version", InitProducerIdRequest.VERSIONS)
def test_error_response_puts_the_code_at_the_top_with_no_producer(version):
    code = ErrorCode.CONCURRENT_TRANSACTIONS
    assert error_response(REQUEST, code, version) == InitProducerIdResponse(
        error_code=code, producer_id=-1, producer_epoch=-1
    )
