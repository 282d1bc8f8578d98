"""Client quota entities and precedence exactly as Kafka's ClientQuotaManager (default callback): which entity's
bound applies to a (user, client-id), which rate (metric tags) clients share, throttling, the request quota's
bound on throttle time, the fetch cap, and levels staying enabled once configured."""

from __future__ import annotations

import pytest

from minikafka.broker.quotas.client_quota_manager import CLIENT_ID, USER, ClientQuotaManager, quota_entity
from minikafka.broker.quotas.quota_managers import QuotaManagers


def entity(user: str | bool | None = False, client: str | bool | None = False) -> tuple[tuple[str, str | None], ...]:
    """False: the type is absent; None: its default; a string: that name."""
    parts: dict[str, str | None] = {}
    if user is not False:
        parts[USER] = None if user is None else str(user)
    if client is not False:
        parts[CLIENT_ID] = None if client is None else str(client)
    return quota_entity(parts)


ALL_LEVELS = {
    entity("alice", "app"): 1.0,  # /config/users/alice/clients/app
    entity("alice", None): 2.0,  # /config/users/alice/clients/<default>
    entity("alice"): 3.0,  # /config/users/alice
    entity(None, "app"): 4.0,  # /config/users/<default>/clients/app
    entity(None, None): 5.0,  # /config/users/<default>/clients/<default>
    entity(None): 6.0,  # /config/users/<default>
    entity(client="app"): 7.0,  # /config/clients/app
    entity(client=None): 8.0,  # /config/clients/<default>
}


def test_precedence_follows_kafkas_eight_levels() -> None:
    quotas = dict(ALL_LEVELS)
    manager = ClientQuotaManager("Produce")
    expected = [(1.0, ("alice", "app")), (2.0, ("alice", "app")), (3.0, ("alice", "")), (4.0, ("alice", "app")),
                (5.0, ("alice", "app")), (6.0, ("alice", "")), (7.0, ("", "app")), (8.0, ("", "app"))]
    for bound, tags in expected:
        manager.update_quotas(quotas)
        assert manager.quota("alice", "app") == bound, quotas
        assert manager.quota_metric_tags("alice", "app") == tags
        del quotas[next(e for e, b in quotas.items() if b == bound)]
    manager.update_quotas(quotas)
    assert quotas == {} and manager.quota("alice", "app") is None


def test_single_level_configurations_share_rates_by_that_level() -> None:
    manager = ClientQuotaManager("Produce")
    manager.update_quotas({entity(client="app"): 100.0})
    assert manager.quota_metric_tags("alice", "app") == ("", "app")  # every user of client app shares one rate
    assert manager.quota("bob", "app") == 100.0
    assert manager.quota("bob", "other") is None
    manager = ClientQuotaManager("Produce")
    manager.update_quotas({entity("alice"): 100.0})
    assert manager.quota_metric_tags("alice", "app") == ("alice", "")
    assert manager.quota("alice", "other") == 100.0 and manager.quota("bob", "app") is None
    manager = ClientQuotaManager("Produce")
    manager.update_quotas({entity(None, None): 100.0})
    assert manager.quota_metric_tags("alice", "app") == ("alice", "app")
    assert manager.quota("anyone", "anything") == 100.0


def test_levels_stay_enabled_after_their_quotas_are_removed() -> None:
    manager = ClientQuotaManager("Produce")
    assert not manager.quotas_enabled
    manager.update_quotas({entity(client="app"): 100.0})
    manager.update_quotas({})
    assert manager.quotas_enabled  # Kafka: until the next restart
    assert manager.record_and_get_throttle_time_ms("ANONYMOUS", "app", 10**9, 0) == 0  # no bound, no throttle


def test_a_client_over_its_byte_rate_is_throttled() -> None:
    manager = ClientQuotaManager("Produce", samples=11, window_ms=1000)
    manager.update_quotas({entity(client="app"): 1000.0})
    assert manager.record_and_get_throttle_time_ms("ANONYMOUS", "app", 10_000, 0) == 0
    assert manager.record_and_get_throttle_time_ms("ANONYMOUS", "app", 5_000, 0) == 5000
    # another client id has no quota; another user of client "app" shares its rate
    assert manager.record_and_get_throttle_time_ms("ANONYMOUS", "other", 10**9, 0) == 0
    assert manager.record_and_get_throttle_time_ms("bob", "app", 0, 0) == 5000
    manager.record_throttle("ANONYMOUS", "app", 5000, 0)
    assert manager.throttle_stats()[("", "app")] == (1, 5000)


def test_request_quota_throttles_are_bounded_by_one_window() -> None:
    managers = QuotaManagers(samples=11, window_size_seconds=1)
    managers.update({entity(client="app"): {"request_percentage": 10.0}})
    # 10 % of a thread over 10 s is 100 %-seconds; record 10 000 % (100 s of thread time)
    assert managers.request.record_and_get_throttle_time_ms("ANONYMOUS", "app", 10_000.0, 0) == 1000


def test_fetch_max_bytes_is_capped_to_what_one_window_allows() -> None:
    managers = QuotaManagers(samples=11, window_size_seconds=1)
    assert managers.fetch.max_value_in_quota_window("ANONYMOUS", "app") == float("inf")
    managers.update({entity(client="app"): {"consumer_byte_rate": 1000.0, "producer_byte_rate": 50.0}})
    assert managers.fetch.max_value_in_quota_window("ANONYMOUS", "app") == pytest.approx(10_000.0)
    assert managers.produce.quota("ANONYMOUS", "app") == 50.0
    assert managers.request.quota("ANONYMOUS", "app") is None
