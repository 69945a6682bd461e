"""Authentication that changes with every attempt: AWS Signature Version 4 and Google OAuth tokens.

The other schemes of `endpoint.auth` (header, bearer, none, and a key given to a chained scheme) are
constant headers, set once on the client (`Endpoint.auth_headers`). The two chained schemes take
credentials from a standard chain when no key is given, and the call layer (call.py) asks a `Signer`
to sign each attempt just before it is sent, so a retry is signed anew:

- aws-sigv4 (the `bedrock` extra): botocore's `SigV4Auth` over the method, URL, content type and body,
  with the credentials of botocore's chain (environment, shared profile, container or instance role),
  or the botocore `Credentials` given as `credentials=`; the region is the rule file's, else the chain's;
- google-oauth (the `vertex` extra): `Authorization: Bearer <token>` from google-auth's application
  default credentials for the rule file's scopes (or the google-auth `Credentials` given), refreshed
  before they expire (google-auth's own margin) and once more after a 401.

Credentials are resolved and refreshed in a worker thread (they may call a metadata or token
endpoint). Tokens, the session token, the secret key and recent signatures are the call layer's
secrets: scrubbed from errors and logs like the API key (`secrets()`). botocore logs its canonical
request and signature at DEBUG; those records are blanked.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from ..errors import ConfigError, ProviderError
from ..translate.endpoint import Auth
from .transport import Outgoing

RECENT = 64  # signatures remembered for scrubbing: one per attempt in flight is the need
SIGNED = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")  # what SigV4Auth adds to a request


class Signer:
    """Signs each attempt of one client's calls; `renew()` after a 401 (True when retrying can help)."""

    async def sign(self, request: Outgoing) -> None:
        raise NotImplementedError

    async def renew(self) -> bool:
        return False

    def secrets(self) -> list[str]:
        raise NotImplementedError


def signer_for(auth: Auth, key: str, provider: str, credentials: Any = None) -> Signer | None:
    """The signer a scheme needs, None for the constant ones (a key given to a chained scheme is constant)."""
    if key or auth.scheme not in ("aws-sigv4", "google-oauth"):
        if credentials is not None:
            raise ConfigError(f"credentials= is for auth aws-sigv4 or google-oauth without a key, not {auth.scheme}")
        return None
    if auth.scheme == "aws-sigv4":
        return AwsSigner(auth, credentials)
    return GoogleSigner(auth, credentials, provider)


def _extra(extra: str, package: str, scheme: str) -> ConfigError:
    return ConfigError(f"auth {scheme} needs {package}: pip install 'toolnexus[{extra}]'")


class _Blank(logging.Filter):
    """botocore.auth logs the canonical request (with the session token) and the signature at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.args = tuple("***" for _ in record.args) if isinstance(record.args, tuple) else None
            if record.args is None:
                record.msg = "***"
        return True


class AwsSigner(Signer):
    def __init__(self, auth: Auth, credentials: Any) -> None:
        try:
            from botocore.auth import SigV4Auth
            from botocore.awsrequest import AWSRequest
            from botocore.session import Session
        except ImportError:
            raise _extra("bedrock", "botocore", auth.scheme) from None
        self._sigv4, self._request = SigV4Auth, AWSRequest
        self._service = auth.service
        self._session = Session() if credentials is None or auth.region is None else None
        region = auth.region or (self._session.get_config_variable("region") if self._session else None)
        if not region:
            raise ConfigError(
                "auth aws-sigv4 needs a region: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region), "
                "or name endpoint.auth.region"
            )
        self._region: str = region
        self._credentials = credentials
        self._signatures: deque[str] = deque(maxlen=RECENT)
        self._keys: list[str] = []  # the session token and secret key of the credentials last used
        logging.getLogger("botocore.auth").addFilter(_BLANK)

    async def _frozen(self) -> Any:
        credentials = self._credentials
        if credentials is None:
            assert self._session is not None
            credentials = await asyncio.to_thread(self._session.get_credentials)
            if credentials is None:
                raise ConfigError(
                    "auth aws-sigv4 found no AWS credentials (environment, shared profile, container or instance "
                    "role); set them, or pass credentials= or api_key= (a key is sent as a bearer token)"
                )
            self._credentials = credentials
        if getattr(credentials, "refresh_needed", None) is not None:  # refreshable: may call out to refresh
            return await asyncio.to_thread(credentials.get_frozen_credentials)
        return credentials

    async def sign(self, request: Outgoing) -> None:
        credentials = await self._frozen()
        self._keys = [s for s in (credentials.token, credentials.secret_key) if s]
        # the URL as every stack sends it (transport.py), so the signature covers what the server receives
        aws = self._request(method="POST", url=request.url, data=request.content,
                            headers={"content-type": request.content_type})  # fmt: skip
        self._sigv4(credentials, self._service, self._region).add_auth(aws)
        for name in SIGNED:
            value = aws.headers.get(name)
            if value is not None:
                request.headers[name] = value
        self._signatures.append(str(aws.headers["Authorization"]).rpartition("Signature=")[2])

    def secrets(self) -> list[str]:
        return [*self._keys, *self._signatures]


class GoogleSigner(Signer):
    def __init__(self, auth: Auth, credentials: Any, provider: str) -> None:
        self._provider = provider
        try:
            import google.auth
            import google.auth.credentials
            import google.auth.transport.requests
        except ImportError:
            raise _extra("vertex", "google-auth", auth.scheme) from None
        self._google = google.auth
        self._scopes = list(auth.scopes)
        if credentials is not None:
            credentials = google.auth.credentials.with_scopes_if_required(  # type: ignore[no-untyped-call]
                credentials, self._scopes
            )
        self._credentials = credentials
        self._tokens: deque[str] = deque(maxlen=RECENT)

    async def _current(self, *, renew: bool = False) -> Any:
        credentials = self._credentials
        if credentials is None:
            try:
                credentials, _ = await asyncio.to_thread(self._google.default, scopes=self._scopes)
            except self._google.exceptions.DefaultCredentialsError:
                raise ConfigError(
                    "auth google-oauth found no application default credentials (GOOGLE_APPLICATION_CREDENTIALS, "
                    "gcloud auth application-default login, or the metadata server); pass credentials= or api_key="
                ) from None
            self._credentials = credentials
        if renew or not credentials.valid:  # valid: a token that is not within google-auth's margin of expiry
            request = self._google.transport.requests.Request()
            try:
                await asyncio.to_thread(credentials.refresh, request)
            except self._google.exceptions.RefreshError as exc:  # its text may quote the token endpoint's answer
                raise ProviderError(f"the Google credentials could not be refreshed ({type(exc).__name__})",
                                    provider=self._provider, kind="connection") from None  # fmt: skip
        if credentials.token and credentials.token not in self._tokens:
            self._tokens.append(credentials.token)
        return credentials

    async def sign(self, request: Outgoing) -> None:
        credentials = await self._current()
        request.headers["Authorization"] = f"Bearer {credentials.token}"

    async def renew(self) -> bool:
        await self._current(renew=True)
        return True

    def secrets(self) -> list[str]:
        return list(self._tokens)


_BLANK = _Blank()
