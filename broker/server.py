"""`KafkaServer`: wires storage, the replica manager, handlers, the listener and the metrics endpoint, runs
the periodic log tasks, and shuts down gracefully.

Startup: load (and recover) every partition log, then listen. Shutdown (SIGTERM/SIGINT): stop accepting,
let in-flight requests finish, then flush every log, snapshot producer state and write the checkpoints and
the clean-shutdown marker. Periodic tasks that touch the disk run in worker threads. Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import Awaitable, Callable

from minikafka.broker.admin_auth import AdminAuthenticator
from minikafka.broker.admin_http import AdminHttpServer, RequestBody
from minikafka.broker.admin_manager import AdminManager
from minikafka.broker.cleaner_state import cleaner_state
from minikafka.broker.compaction_plans import CompactionPlanUploads
from minikafka.broker.config import KafkaConfig
from minikafka.broker.console import Console
from minikafka.broker.context import BrokerContext
from minikafka.broker.dispatcher import Dispatcher
from minikafka.broker.dynamic_config import DynamicBrokerConfig
from minikafka.broker.erasure import Erasure
from minikafka.broker.fetch_manager import FetchManager
from minikafka.broker.fetch_session_cache import FetchSessionCache
from minikafka.broker.groups.group_coordinator import GroupCoordinator
from minikafka.broker.groups.offsets_topic import ReplicaOffsetsTopic
from minikafka.broker.groups.scheduler import LoopScheduler
from minikafka.broker.metrics import BrokerMetrics
from minikafka.broker.network import Listener, SocketServer
from minikafka.broker.quotas.quota_managers import QuotaManagers
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.security.sasl_authenticator import SaslMechanisms
from minikafka.broker.security.scram_credentials import ScramCredentialStore
from minikafka.broker.security.ssl_factory import create_server_context
from minikafka.broker.share.share_coordinator import ShareCoordinator
from minikafka.broker.share.share_metrics import ShareGroupCollector
from minikafka.broker.startup_error import bind_error
from minikafka.broker.transactions.transaction_coordinator import TransactionCoordinator
from minikafka.broker.transactions.transaction_log import TRANSACTION_STATE_TOPIC
from minikafka.broker.transactions.transaction_marker_writer import ReplicaTxnMarkerWriter
from minikafka.broker.transactions.transaction_state_manager import TransactionStateManager
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.protocol.errors import InvalidConfigError, UnknownTopicOrPartitionError
from minikafka.storage.clock import Clock, SystemClock
from minikafka.storage.log_manager import LogManager

log = logging.getLogger(__name__)

#: seconds after start-up before an idle cleaner thread starts its worker process while no log is compacted
CLEANER_PRESTART_DELAY_S = 2.0


class KafkaServer:
    """One broker: owns the LogManager, the listeners and the background tasks."""

    def __init__(self, config: KafkaConfig, clock: Clock | None = None) -> None:
        self.dynamic_config = DynamicBrokerConfig(config)  # persisted dynamic broker configs over server.properties
        config = self.dynamic_config.current
        self.config = config
        self.clock = clock or SystemClock()
        self.log_manager = LogManager(config.log_dir, config.props, self.clock)
        self.scram_credentials = ScramCredentialStore.load(config.log_dir)
        self.quotas = QuotaManagers.for_broker(config.props, config.log_dir)  # client quotas from the log dir
        self.metrics = BrokerMetrics(self.log_manager.all_logs)
        self.metrics.register_log_manager(self.log_manager)
        self.replica_manager = ReplicaManager(self.log_manager, self.metrics.no_key_compacted_topic_records.inc)
        # The cleaner's worker processes start once a compacted log exists or the broker has been up a while,
        # not with the broker: see LogCleaner._prestart_due (bench/startup.py measured the cost).
        self.log_cleaner = LogCleaner(self.log_manager, config.cleaner, self.clock,
                                      prestart_delay_s=CLEANER_PRESTART_DELAY_S)
        self.metrics.register_log_cleaner(self.log_cleaner, str(config.log_dir))
        self.fetch_manager = FetchManager(
            FetchSessionCache(int(config["max.incremental.fetch.session.cache.slots"]),
                              int(config["minikafka.incremental.fetch.session.eviction.ms"])),
            self.clock.monotonic_ms,
        )
        self.metrics.register_fetch_sessions(self.fetch_manager)
        self.socket_server: SocketServer | None = None
        self.admin_http: AdminHttpServer | None = None
        self.compaction_plans = CompactionPlanUploads(config.log_dir, self.log_cleaner)
        self._tasks: list[asyncio.Task[None]] = []
        self.group_coordinator: GroupCoordinator | None = None
        self.txn_coordinator: TransactionCoordinator | None = None
        self.share_coordinator: ShareCoordinator | None = None
        self._stopped = asyncio.Event()

    async def startup(self) -> None:
        # Listening sockets first (not serving yet): a listener on port 0 advertises the port it got.
        self.socket_server = SocketServer(self._listeners(), self.config.network_limits,
                                          sasl_mechanisms=self._sasl_mechanisms())
        await self.socket_server.bind()
        self.config = self.config.with_bound_ports(self.socket_server.bound_ports)
        await asyncio.to_thread(self.log_manager.startup)
        if self.config.cleaner.enable:
            self.log_cleaner.startup()
        admin = AdminManager(self.log_manager, self.config, dynamic_config=self.dynamic_config,
                             log_cleaner=self.log_cleaner)
        self.group_coordinator = GroupCoordinator.for_broker(
            self.config.props, self.replica_manager, admin, self.clock
        )
        self.share_coordinator = ShareCoordinator.for_broker(
            self.config.props, self.group_coordinator.manager, self.group_coordinator.status, self.replica_manager,
            admin, self.clock)
        self.socket_server.disconnect_listeners.append(self.share_coordinator.on_disconnect)
        self.metrics.registry.register(ShareGroupCollector(self.share_coordinator))
        producer_ids = self.log_manager.producer_ids()

        async def allocate_producer_id() -> int:
            return await asyncio.to_thread(producer_ids.next_producer_id)

        self.txn_coordinator = TransactionCoordinator(
            self.config.transactions,
            TransactionStateManager(
                self.config.transactions,
                ReplicaOffsetsTopic(self.replica_manager, admin, TRANSACTION_STATE_TOPIC),
                self.clock,
            ),
            ReplicaTxnMarkerWriter(self.replica_manager, self.group_coordinator),
            allocate_producer_id,
            LoopScheduler(),
            self.clock,
        )
        authorizer = BrokerContext.authorizer_for(self.config)
        ctx = BrokerContext(
            config=self.config,
            cluster_id=self.log_manager.cluster_id,
            replica_manager=self.replica_manager,
            admin=admin,
            producer_ids=producer_ids,
            group_coordinator=self.group_coordinator,
            share_coordinator=self.share_coordinator,
            txn_coordinator=self.txn_coordinator,
            fetch_manager=self.fetch_manager,
            authorizer=authorizer,
            scram_credentials=self.scram_credentials,
            quotas=self.quotas,
        )
        # The HTTP port comes up before the Kafka listeners: a client that got a Metadata answer can scrape.
        metrics_port = int(self.config["minikafka.metrics.port"])
        if metrics_port >= 0:
            # Once security is configured, /admin/* needs a super user's or a CLUSTER-ACL holder's credentials.
            self.admin_http = AdminHttpServer(
                str(self.config["minikafka.metrics.host"]), metrics_port, self.metrics.registry,
                AdminAuthenticator.for_broker(self.config, self.scram_credentials, authorizer),
            )
            await asyncio.to_thread(self.compaction_plans.clear)
            self.admin_http.body_routes[("POST", "/admin/compact")] = self._admin_compact
            self.admin_http.routes[("GET", "/admin/cleaner-state")] = self._admin_cleaner_state
            self.admin_http.routes[("POST", "/admin/erase")] = Erasure(
                self.log_manager, self.replica_manager, self.log_cleaner, self.clock).erase
            Console(self.log_manager, self.log_cleaner, self.clock, self.group_coordinator,
                    self.share_coordinator).register(self.admin_http)
            try:
                await self.admin_http.start()
            except OSError as error:
                raise bind_error("minikafka.metrics.port", str(metrics_port), error,
                                 "choose another port (0: any free one, -1: no metrics/admin HTTP)") from None
        await self.socket_server.start(Dispatcher(ctx, self.metrics))
        self._tasks.append(asyncio.create_task(self._load_coordinators(), name="minikafka-coordinator-load"))
        self._schedule("roll", int(self.config["minikafka.log.roll.check.interval.ms"]), self._roll_due_segments)
        self._schedule("retention", int(self.config["log.retention.check.interval.ms"]), self._enforce_retention)
        self._schedule(
            "recovery-point-checkpoint",
            int(self.config["log.flush.offset.checkpoint.interval.ms"]),
            self._checkpoint_recovery_points,
        )
        self._schedule(
            "log-start-offset-checkpoint",
            int(self.config["log.flush.start.offset.checkpoint.interval.ms"]),
            self._checkpoint_log_start_offsets,
        )
        flush_interval_ms = int(self.config["log.flush.scheduler.interval.ms"])
        if flush_interval_ms < 2**62:
            self._schedule("flush", flush_interval_ms, self._flush_dirty_logs)
        http = f"http://{self.admin_http.host}:{self.admin_http.port}" if self.admin_http else None
        log.info(
            "minikafka started: Kafka listeners %s, console %s, metrics %s, log dir %s",
            ", ".join(f"{ep.listener_name} ({ep.security_protocol}) {ep.host or '*'}:"
                      f"{self.socket_server.bound_ports[ep.listener_name]}" for ep in self.config.listeners),
            f"{http}/" if http else "disabled", f"{http}/metrics" if http else "disabled", self.config.log_dir,
        )

    async def _load_coordinators(self) -> None:
        """Groups first: completing a transaction left in Prepare* may write a marker to __consumer_offsets,
        which must land on loaded groups."""
        await self._load_groups()
        assert self.txn_coordinator is not None
        started = self.clock.monotonic_ms()
        try:
            await self.txn_coordinator.startup()
        except Exception:
            self.txn_coordinator.active = False
            log.exception("Loading transactions from __transaction_state failed; transactional requests get "
                          "COORDINATOR_NOT_AVAILABLE until restart")
            return
        log.info("Loaded %d transactional ids in %d ms", len(self.txn_coordinator.manager.transactions),
                 self.clock.monotonic_ms() - started)

    async def _load_groups(self) -> None:
        assert self.group_coordinator is not None
        started = self.clock.monotonic_ms()
        if self.share_coordinator is not None:
            try:
                await self.share_coordinator.load_state()
            except Exception:
                log.exception("Loading share-partition state from __share_group_state failed; share fetches get "
                              "COORDINATOR_LOAD_IN_PROGRESS until restart")
        try:
            await self.group_coordinator.startup()
        except Exception:
            # Serving groups from a partial load would hand out wrong offsets: refuse them instead.
            self.group_coordinator.active = False
            log.exception("Loading consumer groups from __consumer_offsets failed; group requests get "
                          "COORDINATOR_NOT_AVAILABLE until restart")
            return
        log.info("Loaded %d consumer groups in %d ms", len(self.group_coordinator.manager.groups),
                 self.clock.monotonic_ms() - started)
        if self.share_coordinator is not None:
            self.share_coordinator.on_groups_loaded()

    @property
    def port(self) -> int:
        """The first listener's bound port."""
        assert self.socket_server is not None
        return self.socket_server.port

    def _sasl_mechanisms(self) -> SaslMechanisms | None:
        """The mechanisms of the SASL listeners (None without one), each listener's settings checked now; SCRAM
        logins read the same credential store that AlterUserScramCredentials writes."""
        sasl_listeners = [ep.listener_name for ep in self.config.listeners if ep.uses_sasl]
        if not sasl_listeners:
            return None
        mechanisms = SaslMechanisms(self.config.props, self.scram_credentials)
        for name in sasl_listeners:
            mechanisms.listener(name)
        return mechanisms

    def _listeners(self) -> list[Listener]:
        """Every configured listener with, for SSL and SASL_SSL, its TLS context (key and trust stores are read
        here: a bad store stops the broker with the key and the reason)."""
        listeners = []
        for endpoint in self.config.listeners:
            ssl_config = self.config.ssl_configs.get(endpoint.listener_name)
            if ssl_config is None:
                listeners.append(Listener(endpoint))
            else:
                listeners.append(Listener(endpoint, create_server_context(ssl_config), ssl_config.principal_mapper))
        return listeners

    def _schedule(self, name: str, interval_ms: int, action: Callable[[], Awaitable[None]]) -> None:
        if interval_ms <= 0:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000)
                try:
                    await action()
                except Exception:
                    log.exception("periodic task %s failed; it will run again", name)

        self._tasks.append(asyncio.create_task(loop(), name=f"minikafka-{name}"))

    async def _roll_due_segments(self) -> None:
        await asyncio.to_thread(self.log_manager.roll_due_segments, self.clock.time_ms())

    async def _enforce_retention(self) -> None:
        await asyncio.to_thread(self._enforce_retention_of_non_compacted_logs, self.clock.time_ms())

    def _enforce_retention_of_non_compacted_logs(self, now_ms: int) -> None:
        """Kafka's retention thread skips every compacted log: cleaner threads run their retention (spec
        §2.12), so segments are never deleted under a cleaning round; with the cleaner disabled they grow."""
        deleted = 0
        for partition_log in self.log_manager.all_logs():
            if not partition_log.config.compact:
                deleted += partition_log.delete_retention_segments(now_ms)
        if deleted:
            self.log_manager.checkpoint_log_start_offsets()

    async def _admin_compact(self, query: dict[str, list[str]], body: RequestBody) -> tuple[int, str, bytes]:
        """`POST /admin/compact?topic=T[&partition=N][&wait=true][&timeout_ms=M]`: clean now, ignoring the
        dirty-ratio threshold (min lag still holds). 200 with the result when done, else 202 with progress.
        With `&exact=true` the body is a retained-offset plan for partition N (broker/compaction_plans.py)."""

        def reply(status: int, body: object) -> tuple[int, str, bytes]:
            return status, "application/json", json.dumps(body).encode() + b"\n"

        topic = query.get("topic", [""])[0]
        if not topic:
            return reply(400, {"error": "missing topic parameter"})
        try:
            partition = int(query["partition"][0]) if "partition" in query else None
            timeout_s = int(query.get("timeout_ms", ["300000"])[0]) / 1000
        except ValueError:
            return reply(400, {"error": "partition and timeout_ms must be integers"})
        wait = query.get("wait", ["false"])[0].lower() in ("1", "true", "yes")
        if query.get("exact", ["false"])[0].lower() in ("1", "true", "yes"):
            return await self.compaction_plans.compact_exact(topic, partition, body, wait=wait, timeout_s=timeout_s)
        try:
            request = await asyncio.to_thread(self.log_cleaner.request_compaction, topic, partition)
        except UnknownTopicOrPartitionError as error:
            return reply(404, {"error": error.message or str(error)})
        except InvalidConfigError as error:
            return reply(400, {"error": error.message or str(error)})
        if wait:
            await asyncio.to_thread(request.wait, timeout_s)
        return reply(200 if request.done.is_set() else 202, request.to_json())

    async def _admin_cleaner_state(self, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        """`GET /admin/cleaner-state?topic=T`: cleaner checkpoints and compaction configs (broker/cleaner_state.py)."""
        topic = query.get("topic", [""])[0]
        if not topic:
            return 400, "application/json", b'{"error": "missing topic parameter"}\n'
        try:
            state = await asyncio.to_thread(
                functools.partial(
                    cleaner_state, self.log_manager, self.log_cleaner, topic, self.clock.time_ms(),
                    roll_check_interval_ms=int(self.config["minikafka.log.roll.check.interval.ms"])))
        except UnknownTopicOrPartitionError as error:
            return 404, "application/json", json.dumps({"error": error.message or str(error)}).encode() + b"\n"
        return 200, "application/json", json.dumps(state).encode() + b"\n"

    async def _checkpoint_recovery_points(self) -> None:
        await asyncio.to_thread(self.log_manager.checkpoint_recovery_points)

    async def _checkpoint_log_start_offsets(self) -> None:
        await asyncio.to_thread(self.log_manager.checkpoint_log_start_offsets)

    async def _flush_dirty_logs(self) -> None:
        await asyncio.to_thread(self.log_manager.flush_dirty_logs, self.clock.time_ms())

    async def shutdown(self) -> None:
        """Graceful stop; idempotent."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        log.info("minikafka shutting down")
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.txn_coordinator is not None:
            self.txn_coordinator.shutdown()
        if self.group_coordinator is not None:
            self.group_coordinator.shutdown()
        if self.share_coordinator is not None:
            self.share_coordinator.shutdown()
        if self.socket_server is not None:
            await self.socket_server.stop(int(self.config["minikafka.shutdown.grace.ms"]) / 1000)
        if self.admin_http is not None:
            await self.admin_http.stop()
        await asyncio.to_thread(self.log_cleaner.shutdown)
        await asyncio.to_thread(self.log_manager.shutdown)
        log.info("minikafka shut down cleanly")

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def __aenter__(self) -> KafkaServer:
        await self.startup()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        with contextlib.suppress(Exception):
            await self.shutdown()
