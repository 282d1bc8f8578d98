"""`QuotaManagers`: the broker's three enforced client quotas (Kafka's QuotaFactory.QuotaManagers) and their
settings, and `QUOTA_CONFIG_DEF` (`quota.window.num`, `quota.window.size.seconds`).

- `produce` (`producer_byte_rate`): each Produce request's size;
- `fetch` (`consumer_byte_rate`): each consumer Fetch response's size;
- `request` (`request_percentage`): the time spent handling each request, as a percentage of one thread
  (throttles bounded by one window, as Kafka's ClientRequestQuotaManager). minikafka has one event-loop thread
  instead of network and I/O thread pools, so the time counted is the time the event loop spent running the
  request's handler (its coroutine's steps: waits for long polls, locks and worker threads excluded) plus the
  encoding of its response, recorded without throttling as Kafka records network-thread time.
`controller_mutation_rate` is stored and described but not enforced. Not thread-safe: the event-loop thread
owns them; `update()` is called there after each AlterClientQuotas (and at startup).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from minikafka.broker.quotas.client_quota_manager import ClientQuotaManager, QuotaEntity
from minikafka.broker.quotas.client_quota_store import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotaStore,
)
from minikafka.storage.config_def import ConfigDef, ConfigKey, ConfigType, at_least

QUOTA_WINDOW_NUM = "quota.window.num"
QUOTA_WINDOW_SIZE_SECONDS = "quota.window.size.seconds"

QUOTA_CONFIG_DEF = ConfigDef([
    ConfigKey(QUOTA_WINDOW_NUM, ConfigType.INT, 11, at_least(1),
              "The number of samples to retain in memory for client quotas."),
    ConfigKey(QUOTA_WINDOW_SIZE_SECONDS, ConfigType.INT, 1, at_least(1),
              "The time span of each sample for client quotas."),
])


class QuotaManagers:
    """The produce, fetch and request quota managers, sharing one window configuration, and the quota configs
    they enforce (`store`; in memory unless loaded from a log dir)."""

    def __init__(self, store: ClientQuotaStore | None = None, samples: int = 11, window_size_seconds: int = 1) -> None:
        self.store = store if store is not None else ClientQuotaStore()
        window_ms = window_size_seconds * 1000
        self.produce = ClientQuotaManager("Produce", samples, window_ms)
        self.fetch = ClientQuotaManager("Fetch", samples, window_ms)
        self.request = ClientQuotaManager("Request", samples, window_ms, max_throttle_time_ms=window_ms)
        self.update(self.store.entities())

    @classmethod
    def for_broker(cls, props: Mapping[str, str], log_dir: Path) -> QuotaManagers:
        """The managers of a broker: its window settings, the quotas persisted in its log dir."""
        values = QUOTA_CONFIG_DEF.parse(props)
        return cls(ClientQuotaStore.load(log_dir), int(values[QUOTA_WINDOW_NUM]),
                   int(values[QUOTA_WINDOW_SIZE_SECONDS]))

    @property
    def quotas_enabled(self) -> bool:
        return self.produce.quotas_enabled or self.fetch.quotas_enabled or self.request.quotas_enabled

    def update(self, entities: Mapping[QuotaEntity, Mapping[str, float]]) -> None:
        """Apply quota configs (the store's whole set, after every change) to the managers."""
        for manager, key in ((self.produce, PRODUCER_BYTE_RATE), (self.fetch, CONSUMER_BYTE_RATE),
                             (self.request, REQUEST_PERCENTAGE)):
            manager.update_quotas({entity: values[key] for entity, values in entities.items() if key in values})
