"""Test material: the bytes of the non-SSE stream framings (NDJSON lines, AWS event-stream frames), and
checks of what a request to the stub was authenticated with (a bearer token, an AWS SigV4 signature)."""

from __future__ import annotations

import binascii
import hmac
import json
import re
import struct
from typing import Any

from toolnexus.devtools.stub import StubRequest

NDJSON = "application/x-ndjson"
AWS_EVENTSTREAM = "application/vnd.amazon.eventstream"


def ndjson_lines(objects: list[Any]) -> list[bytes]:
    """Each object as one line of newline-delimited JSON."""
    return [json.dumps(item, ensure_ascii=False).encode("utf-8") + b"\n" for item in objects]


def aws_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream frame (string headers only): prelude (total and headers length, CRC32),
    headers, payload, CRC32 of all before it. Written here because botocore only decodes frames and
    the maintained encoder (smithy-aws-event-stream) needs a newer Python; the tests check each frame
    this writes with botocore's decoder."""
    head = b"".join(
        struct.pack("!B", len(name.encode()))
        + name.encode()
        + struct.pack("!BH", 7, len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    prelude = struct.pack("!II", 16 + len(head) + len(payload), len(head))
    message = prelude + struct.pack("!I", binascii.crc32(prelude)) + head + payload
    return message + struct.pack("!I", binascii.crc32(message))


def aws_event(event_type: str, payload: Any) -> bytes:
    """An `event` frame of `event_type` with a JSON payload."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return aws_frame(headers, json.dumps(payload).encode("utf-8"))


def aws_exception(exception_type: str, payload: Any) -> bytes:
    """An `exception` frame: the stream's error, typed by `:exception-type`, its JSON payload the provider's."""
    headers = {":exception-type": exception_type, ":content-type": "application/json", ":message-type": "exception"}
    return aws_frame(headers, json.dumps(payload).encode("utf-8"))


def bearer_of(request: StubRequest) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, else None."""
    value = request.headers.get("authorization", "")
    return value[7:] if value.startswith("Bearer ") else None


_SIGV4 = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/\d{8}/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request, "
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<signature>[0-9a-f]{64})"
)


def sigv4_verified(request: StubRequest, credentials: Any, service: str, region: str) -> bool:
    """Whether the request carries a valid AWS SigV4 signature by `credentials` (a botocore Credentials)
    for `service` in `region`: botocore signs the request as received (its signed headers, body and
    X-Amz-Date) again, and the two signatures must be equal."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    found = _SIGV4.fullmatch(request.headers.get("authorization", ""))
    if found is None or (found["key"], found["region"], found["service"]) != (credentials.access_key, region, service):
        return False
    signed = found["signed"].split(";")
    if any(name not in request.headers for name in signed):
        return False
    url = f"http://{request.headers['host']}{request.path}"
    again = AWSRequest(method="POST", url=url, data=request.raw, headers={n: request.headers[n] for n in signed})
    again.context["timestamp"] = request.headers.get("x-amz-date", "")
    signer = SigV4Auth(credentials, service, region)
    expected = signer.signature(signer.string_to_sign(again, signer.canonical_request(again)), again)
    return hmac.compare_digest(expected, found["signature"])
