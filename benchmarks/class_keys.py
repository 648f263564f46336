"""One key per student without a database: a LiteLLM `custom_auth` hook that checks a key file.

LiteLLM keeps its virtual keys in Postgres. A class gateway without a database can still give
every student a key of their own: the teacher writes `{sha256 of the key: student}` as JSON to
the file named by `CLASS_KEYS_FILE`, and the gateway's config names this hook
(`general_settings: custom_auth: class_keys.user_api_key_auth`, this file beside the config).
Only those keys are let through; the file is read again when it changes, so a student added or a
key revoked mid-class takes effect at the next request. Budgets and rate limits per key still
need the database. The file holds digests, so reading it gives no one a key.

This module runs inside the gateway's own venv (LiteLLM's), not with streamwidgets.
"""

from __future__ import annotations

import hashlib
import json
import os

from litellm.proxy._types import ProxyException, UserAPIKeyAuth

_cache: dict[str, object] = {"mtime": None, "keys": {}}


def _students() -> dict[str, str]:
    path = os.environ["CLASS_KEYS_FILE"]
    mtime = os.stat(path).st_mtime_ns
    if _cache["mtime"] != mtime:
        with open(path, encoding="utf-8") as f:
            _cache["keys"] = json.load(f)
        _cache["mtime"] = mtime
    keys = _cache["keys"]
    assert isinstance(keys, dict)
    return keys


async def user_api_key_auth(request: object, api_key: str) -> UserAPIKeyAuth:
    digest = hashlib.sha256(api_key.removeprefix("Bearer ").strip().encode()).hexdigest()
    student = _students().get(digest)
    if student is None:
        # A ProxyException is LiteLLM's own error envelope with this status; any other exception
        # would come out as a 500 (its handler looks for a database first).
        raise ProxyException(
            message="This key is not one of the class's keys: ask your teacher for yours.",
            type="auth_error",
            param="api_key",
            code=401,
        )
    return UserAPIKeyAuth(api_key=digest, user_id=student)
