"""Keywords are checked before anything is sent: a near miss names the option meant, a field of
the provider's own goes through `extra_body=`, and the documented ones pass."""

from __future__ import annotations

import pytest

import streamwidgets as sw
from streamwidgets.core._options import check_options


@pytest.mark.parametrize(
    "typo, meant",
    [
        ("temprature", "temperature"),
        ("sytem", "system"),  # not "stream"
        ("modle", "model"),
        ("max_token", "max_tokens"),
        ("top_pp", "top_p"),
        ("scael", "scale"),
        ("retires", "retries"),
        ("logprob", "logprobs"),
    ],
)
def test_a_near_miss_fails_at_once_and_names_the_option_meant(typo: str, meant: str):
    with pytest.raises(ValueError, match=f"unknown option {typo}=: did you mean {meant}=\\?"):
        sw.make_request("hi", provider="openai", api_key="k", **{typo: 1})


def test_a_provider_s_own_field_goes_through_extra_body():
    with pytest.raises(ValueError, match=r"extra_body=\{'ignore_eos': \.\.\.\}"):
        sw.make_request("hi", provider="openai", api_key="k", ignore_eos=True)
    body = sw.make_request("hi", provider="openai", api_key="k", extra_body={"ignore_eos": True}).body()
    assert body["ignore_eos"] is True


@pytest.mark.parametrize(
    "provider, api, field",
    [
        ("openai", "chat", "temperature"),
        ("openai", "responses", "reasoning"),
        ("anthropic", "messages", "thinking"),
        ("perplexity", "chat", "search_recency_filter"),
        ("local", "chat", "dry_multiplier"),
        ("llamacpp", "chat", "ignore_eos"),
        ("demo", "chat", "demo"),
    ],
)
def test_documented_fields_pass(provider: str, api: str, field: str):
    check_options([field], api, provider)


def test_any_server_by_base_url_takes_every_api_s_fields():
    request = sw.make_request("hi", base_url="http://127.0.0.1:9/v1", model="m", top_k=5, thinking={"type": "enabled"})
    assert request.body()["top_k"] == 5


def test_every_api_has_its_dialect_and_its_body_fields():
    from streamwidgets.core import APIS
    from streamwidgets.core.dialects import dialect_class

    for api in APIS:
        dialect = dialect_class(api)
        assert dialect.name == api and dialect.title and dialect.fields
        assert dialect.url("http://127.0.0.1:1/v1", "m").startswith("http://127.0.0.1:1/v1/")
