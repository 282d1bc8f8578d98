"""`ClientQuotaManager`: one quota type's limits and usage per user and client id, as Kafka's ClientQuotaManager
with its default quota callback.

Quotas are set on entities (`QuotaEntity`: user and/or client-id, each a name or the default) and the most
specific one matching a request applies, in Kafka's order:
    /config/users/<user>/clients/<client-id>, /config/users/<user>/clients/<default>, /config/users/<user>,
    /config/users/<default>/clients/<client-id>, /config/users/<default>/clients/<default>,
    /config/users/<default>, /config/clients/<client-id>, /config/clients/<default>
Usage is measured per *metric tags* (user, client-id), so every client sharing a quota shares its rate: with only
client-id quotas configured the tags are ("", client-id), with only user quotas (user, ""), and so on; with
several levels, the tags of the most specific configured entity (`quota_metric_tags`). Once a level has been
configured it stays enabled until restart (Kafka's quotaTypesEnabled). Sensors unused for an hour are dropped.
Not thread-safe: the event-loop thread owns it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minikafka.broker.quotas.rate import SampledRate

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"

#: A quota entity as DescribeClientQuotas/AlterClientQuotas carry it: sorted (entity type, name or None for the
#: default) pairs, e.g. (("client-id", None), ("user", "alice")) is /config/users/alice/clients/<default>.
QuotaEntity = tuple[tuple[str, str | None], ...]

_NO_QUOTAS = 0
_CLIENT_ID_QUOTA_ENABLED = 1
_USER_QUOTA_ENABLED = 2
_USER_CLIENT_ID_QUOTA_ENABLED = 4
#: Kafka's ClientQuotaManager.InactiveSensorExpirationTimeSeconds
INACTIVE_SENSOR_EXPIRATION_MS = 3_600_000


def quota_entity(entries: Mapping[str, str | None]) -> QuotaEntity:
    return tuple(sorted(entries.items()))


_DEFAULT_USER_CLIENT_ID = quota_entity({USER: None, CLIENT_ID: None})
_DEFAULT_USER = quota_entity({USER: None})
_DEFAULT_CLIENT_ID = quota_entity({CLIENT_ID: None})


@dataclass
class _ClientSensor:
    rate: SampledRate
    throttle_time_ms_total: int = 0
    throttle_count: int = 0
    last_used_ms: int = 0


class ClientQuotaManager:
    """The quotas of one type (`producer_byte_rate`, `consumer_byte_rate` or `request_percentage`) and the rates
    they are checked against. `max_throttle_time_ms` bounds a throttle (the request quota: one window)."""

    def __init__(self, quota_type: str, samples: int = 11, window_ms: int = 1000,
                 max_throttle_time_ms: int | None = None) -> None:
        self.quota_type = quota_type
        self.samples = samples
        self.window_ms = window_ms
        self.max_throttle_time_ms = max_throttle_time_ms
        self._quotas: dict[QuotaEntity, float] = {}
        self._enabled = _NO_QUOTAS
        self._sensors: dict[tuple[str, str], _ClientSensor] = {}
        self._next_expiry_check_ms = 0

    @property
    def quotas_enabled(self) -> bool:
        return self._enabled != _NO_QUOTAS

    @property
    def quotas(self) -> dict[QuotaEntity, float]:
        return dict(self._quotas)

    def update_quotas(self, quotas: Mapping[QuotaEntity, float]) -> None:
        """Replace every user/client-id quota of this type (entities of other types are ignored)."""
        self._quotas = {}
        for entity, bound in quotas.items():
            types = {entity_type for entity_type, _ in entity}
            if not types or not types <= {USER, CLIENT_ID}:
                continue
            self._quotas[entity] = bound
            if USER in types:
                self._enabled |= _USER_CLIENT_ID_QUOTA_ENABLED if CLIENT_ID in types else _USER_QUOTA_ENABLED
            else:
                self._enabled |= _CLIENT_ID_QUOTA_ENABLED

    def quota_metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """DefaultQuotaCallback.quotaMetricTags: the (user, client-id) tags whose rate this client shares."""
        if self._enabled in (_NO_QUOTAS, _CLIENT_ID_QUOTA_ENABLED):
            return "", client_id
        if self._enabled == _USER_QUOTA_ENABLED:
            return user, ""
        if self._enabled == _USER_CLIENT_ID_QUOTA_ENABLED:
            return user, client_id
        quotas = self._quotas
        if (quota_entity({USER: user, CLIENT_ID: client_id}) in quotas
                or quota_entity({USER: user, CLIENT_ID: None}) in quotas):
            return user, client_id
        if quota_entity({USER: user}) in quotas:
            return user, ""
        if quota_entity({USER: None, CLIENT_ID: client_id}) in quotas or _DEFAULT_USER_CLIENT_ID in quotas:
            return user, client_id
        if _DEFAULT_USER in quotas:
            return user, ""
        return "", client_id

    def quota_limit(self, tags: tuple[str, str]) -> float | None:
        """DefaultQuotaCallback.quotaLimit: the bound of the most specific entity matching the tags, or None."""
        user, client_id = tags
        quotas = self._quotas
        candidates: tuple[QuotaEntity, ...]
        if user and client_id:
            candidates = (quota_entity({USER: user, CLIENT_ID: client_id}), quota_entity({USER: user, CLIENT_ID: None}),
                          quota_entity({USER: None, CLIENT_ID: client_id}), _DEFAULT_USER_CLIENT_ID)
        elif user:
            candidates = (quota_entity({USER: user}), _DEFAULT_USER)
        elif client_id:
            candidates = (quota_entity({CLIENT_ID: client_id}), _DEFAULT_CLIENT_ID)
        else:
            return None
        for candidate in candidates:
            bound = quotas.get(candidate)
            if bound is not None:
                return bound
        return None

    def quota(self, user: str, client_id: str) -> float | None:
        """The bound that applies to this user and client id (None: unlimited)."""
        return self.quota_limit(self.quota_metric_tags(user, client_id))

    def record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """maybeRecordAndGetThrottleTimeMs: record `value` against the client's rate; the throttle time if that
        pushed the rate over its quota, else 0. Nothing is recorded while no quota of this type was ever set."""
        if not self.quotas_enabled:
            return 0
        tags = self.quota_metric_tags(user, client_id)
        sensor = self._sensor(tags, now_ms)
        sensor.rate.record(value, now_ms)
        bound = self.quota_limit(tags)
        if bound is None:
            return 0
        throttle_ms = sensor.rate.throttle_time_ms(bound, now_ms)
        if self.max_throttle_time_ms is not None:
            throttle_ms = min(throttle_ms, self.max_throttle_time_ms)
        return throttle_ms

    def record_no_throttle(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """recordNoThrottle / unrecordQuotaSensor (a negative value): change the rate without checking it."""
        if self.quotas_enabled:
            self._sensor(self.quota_metric_tags(user, client_id), now_ms).rate.record(value, now_ms)

    def record_throttle(self, user: str, client_id: str, throttle_ms: int, now_ms: int) -> None:
        """The throttle-time sensor: a throttle of this type was applied to the client's channel."""
        sensor = self._sensor(self.quota_metric_tags(user, client_id), now_ms)
        sensor.throttle_time_ms_total += throttle_ms
        sensor.throttle_count += 1

    def max_value_in_quota_window(self, user: str, client_id: str) -> float:
        """getMaxValueInQuotaWindow: the most one request may record without being throttled for sure (Fetch
        caps its max_bytes to it)."""
        if not self.quotas_enabled:
            return float("inf")
        bound = self.quota(user, client_id)
        if bound is None:
            return float("inf")
        return bound * (self.samples - 1) * self.window_ms / 1000.0

    def throttle_stats(self) -> dict[tuple[str, str], tuple[int, int]]:
        """Per metric tags: (throttles applied, their total ms)."""
        return {tags: (sensor.throttle_count, sensor.throttle_time_ms_total)
                for tags, sensor in self._sensors.items()}

    def _sensor(self, tags: tuple[str, str], now_ms: int) -> _ClientSensor:
        if now_ms >= self._next_expiry_check_ms:
            self._next_expiry_check_ms = now_ms + 60_000
            deadline = now_ms - INACTIVE_SENSOR_EXPIRATION_MS
            for key in [key for key, sensor in self._sensors.items() if sensor.last_used_ms < deadline]:
                del self._sensors[key]
        sensor = self._sensors.get(tags)
        if sensor is None:
            sensor = self._sensors[tags] = _ClientSensor(SampledRate(self.samples, self.window_ms))
        sensor.last_used_ms = now_ms
        return sensor
