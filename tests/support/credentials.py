"""Credentials for the chained auth schemes, offline: a google-auth credential that hands out numbered
tokens, and an AWS chain that reads only what a test sets (no profile files, no instance metadata)."""

from __future__ import annotations

import datetime
from typing import Any

import google.auth.credentials
import pytest

AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "FRAMES_BEARER_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN")  # fmt: skip


class StubGoogleCredentials(google.auth.credentials.Credentials):  # type: ignore[misc]
    """A google-auth credential whose refresh hands out tok-1, tok-2, ... valid for `lifetime`."""

    def __init__(self, lifetime: datetime.timedelta = datetime.timedelta(hours=1)) -> None:
        super().__init__()
        self.lifetime = lifetime
        self.refreshes = 0

    def refresh(self, request: Any) -> None:
        self.refreshes += 1
        self.token = f"tok-{self.refreshes}"
        self.expiry = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + self.lifetime


def isolate_aws(monkeypatch: pytest.MonkeyPatch, empty: str) -> None:
    """The AWS chain reads only what a test sets: `empty` (a path that does not exist) as its files."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", empty)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
