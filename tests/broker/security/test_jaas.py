"""The `sasl.jaas.config` parser against the examples of Kafka's documentation and JaasConfig's rules and messages."""

from __future__ import annotations

import pytest

from minikafka.broker.security.jaas import AppConfigurationEntry, parse_jaas_config, single_login_module

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_kafka_docs_plain_broker_example() -> None:
    # docs/security: listener.name.sasl_ssl.plain.sasl.jaas.config
    entry = single_login_module(
        'org.apache.kafka.common.security.plain.PlainLoginModule required \\\n'
        '    username="admin" \\\n    password="admin-secret" \\\n'
        '    user_admin="admin-secret" \\\n    user_alice="alice-secret";'.replace("\\\n", "\n"))
    assert entry == AppConfigurationEntry(PLAIN, "REQUIRED", {
        "username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"})


def test_kafka_docs_scram_examples() -> None:
    assert single_login_module(f"{SCRAM} required;") == AppConfigurationEntry(SCRAM, "REQUIRED", {})
    entry = single_login_module(f'{SCRAM} required username="alice" password="alice-secret";')
    assert entry.options == {"username": "alice", "password": "alice-secret"}


def test_jaas_file_style_multiple_entries_flags_and_comments() -> None:
    text = """
        // a line comment
        com.example.A sufficient key1=value1 key2="two words";  /* block
        comment */ com.example.B Optional key='single' key_2=word-with-dashes_and$dollar;
        com.example.C requisite;
    """
    entries = parse_jaas_config(text)
    assert entries == [
        AppConfigurationEntry("com.example.A", "SUFFICIENT", {"key1": "value1", "key2": "two words"}),
        AppConfigurationEntry("com.example.B", "OPTIONAL", {"key": "single", "key_2": "word-with-dashes_and$dollar"}),
        AppConfigurationEntry("com.example.C", "REQUISITE", {}),
    ]


def test_quoted_values_keep_special_characters_and_java_escapes() -> None:
    entry = single_login_module(r'm required a="x=y;z,/w" b="tab\there" c="q\"uote" d="\101";')
    assert entry.options == {"a": "x=y;z,/w", "b": "tab\there", "c": 'q"uote', "d": "A"}


@pytest.mark.parametrize(("text", "message"), [
    ("", "Login module not specified in JAAS config"),
    ("   // only a comment", "Login module not specified in JAAS config"),
    ("com.example.A", "Login module control flag not specified in JAAS config"),
    ("com.example.A mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
    ("com.example.A required key;", "Value not specified for key 'key' in JAAS config"),
    ("com.example.A required key=;", "Value not specified for key 'key' in JAAS config"),
    ("com.example.A required key=1234;", "Value not specified for key 'key' in JAAS config"),  # a number token
    ('com.example.A required key="v"', "JAAS config entry not terminated by semi-colon"),
])
def test_errors_use_kafkas_messages(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_jaas_config(text)
    assert str(raised.value) == message


def test_a_listener_mechanism_config_holds_one_module() -> None:
    with pytest.raises(ValueError, match="JAAS config property contains 2 login modules, should be 1 module"):
        single_login_module("a required; b required;")
