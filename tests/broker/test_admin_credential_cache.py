"""The admin port's short cache of verified credentials (broker/admin_auth.py): a console page's requests cost one
PBKDF2 derivation, not one each; a wrong password derives every time; a changed SCRAM credential is checked again at
once (the old password stops working, the new one works). Key derivations are counted at the module's
`salted_password`, the real function wrapped."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker import admin_auth
from minikafka.broker.admin_auth import AdminAuthenticator
from minikafka.broker.security.scram import ScramMechanism, generate_credential
from minikafka.broker.security.scram_credentials import ScramCredentialStore

SHA256 = ScramMechanism.SCRAM_SHA_256


@pytest.fixture
def derivations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    counted: list[str] = []
    real = admin_auth.salted_password

    def counting(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
        counted.append(password)
        return real(mechanism, password, salt, iterations)

    monkeypatch.setattr(admin_auth, "salted_password", counting)
    return counted


def test_a_verified_password_is_cached_until_its_credential_changes(tmp_path: Path, derivations: list[str]) -> None:
    store = ScramCredentialStore(tmp_path / "scram.json")
    store.upsert("ops", SHA256, generate_credential(SHA256, "first-secret", 4096))
    auth = AdminAuthenticator(store, {}, frozenset({"User:ops"}), None)

    assert all(auth.verify_password("ops", "first-secret") for _ in range(12))
    assert derivations == ["first-secret"]
    assert not auth.verify_password("ops", "wrong") and not auth.verify_password("ops", "wrong")
    assert derivations.count("wrong") == 2  # failures are never cached

    store.upsert("ops", SHA256, generate_credential(SHA256, "second-secret", 4096))
    assert not auth.verify_password("ops", "first-secret")
    assert auth.verify_password("ops", "second-secret") and auth.verify_password("ops", "second-secret")
    assert derivations.count("second-secret") == 1


def test_a_cached_password_expires(tmp_path: Path, derivations: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    store = ScramCredentialStore(tmp_path / "scram.json")
    store.upsert("ops", SHA256, generate_credential(SHA256, "secret", 4096))
    auth = AdminAuthenticator(store, {}, frozenset(), None)
    monkeypatch.setattr(admin_auth, "VERIFIED_CACHE_S", 0.0)
    assert auth.verify_password("ops", "secret") and auth.verify_password("ops", "secret")
    assert derivations == ["secret"] * 2
