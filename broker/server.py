"""`KafkaServer`: wires storage, the replica manager, handlers, the listener and the metrics endpoint, runs
the periodic log tasks, and shuts down gracefully.

Startup: load (and recover) every partition log, then listen. Shutdown (SIGTERM/SIGINT): stop accepting,
let in-flight requests finish, then flush every log, snapshot producer state and write the checkpoints and
the clean-shutdown marker. Periodic tasks that touch the disk run in worker threads, which shutdown waits for before
it closes the logs (as it waits for the admin port's threads). Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from minikafka.broker.admin_manager import AdminManager
from minikafka.broker.admin_port import bind_admin_port, first_connection
from minikafka.broker.admin_workers import admin_thread, wait_for_event
from minikafka.broker.cluster import Cluster
from minikafka.broker.config import KafkaConfig
from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import CoordinatorRouting
from minikafka.broker.dispatcher import Dispatcher
from minikafka.broker.dynamic_config import DynamicBrokerConfig
from minikafka.broker.faults.fault_state import FaultState
from minikafka.broker.fetch_manager import FetchManager
from minikafka.broker.fetch_session_cache import FetchSessionCache
from minikafka.broker.follower_states import FollowerStates
from minikafka.broker.lazy_coordinators import COORDINATOR_TOPICS, CoordinatorSet, LazyCoordinators
from minikafka.broker.metrics import BrokerMetrics
from minikafka.broker.network import Listener, RequestDispatcher, SocketServer
from minikafka.broker.partition_states import PartitionStates
from minikafka.broker.quotas.quota_managers import QuotaManagers
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.security.scram_credentials import ScramCredentialStore
from minikafka.broker.share.share_metrics import ShareGroupCollector
from minikafka.broker.startup_error import bind_error
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.protocol.errors import InvalidConfigError, UnknownTopicOrPartitionError
from minikafka.storage.clock import Clock, SystemClock
from minikafka.storage.log_manager import LogManager

if TYPE_CHECKING:
    from minikafka.broker.admin_http import AdminHttpServer, RequestBody
    from minikafka.broker.cluster_reader import ClusterReader
    from minikafka.broker.compaction_plans import CompactionPlanUploads
    from minikafka.broker.groups.group_coordinator import GroupCoordinator
    from minikafka.broker.security.authorizer import StandardAuthorizer
    from minikafka.broker.security.sasl_authenticator import SaslMechanisms
    from minikafka.broker.session import Session
    from minikafka.broker.share.share_coordinator import ShareCoordinator
    from minikafka.broker.transactions.transaction_coordinator import TransactionCoordinator
    from minikafka.storage.producer_id_manager import ProducerIdManager

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
        self.socket_server: SocketServer | None = None  # the first broker's (node.id)
        #: every running broker's listeners, by broker id (`minikafka.brokers`; stop_broker removes one)
        self.socket_servers: dict[int, SocketServer] = {}
        self.cluster = Cluster([config.for_broker(broker_id) for broker_id in config.broker_ids])
        self._dispatchers: dict[int, RequestDispatcher] = {}
        self.admin_http: AdminHttpServer | None = None  # set once it serves (see _serve_admin_http)
        self.compaction_plans: CompactionPlanUploads | None = None
        self._admin_http_task: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._running_actions: set[asyncio.Future[None]] = set()  # periodic actions in progress (threads included)
        self._coordinators: LazyCoordinators | None = None  # set once the partition states are loaded
        self.coordinators: CoordinatorRouting | None = None  # set once the partition states are loaded
        #: wire-level faults a test sets over the admin port (broker/faults); runtime only
        self.faults = FaultState(config.broker_ids)
        self._stopped = asyncio.Event()

    async def startup(self) -> None:
        # Listening sockets first (not serving yet): a listener on port 0 advertises the port it got.
        sasl_mechanisms = self._sasl_mechanisms()
        for broker_id in self.cluster.broker_ids:
            await self._bind_broker(broker_id, sasl_mechanisms)
        self.socket_server = self.socket_servers[self.config.node_id]
        self.config = self.cluster.nodes[self.config.node_id].config
        await asyncio.to_thread(self.log_manager.startup)
        log_manager = self.log_manager
        def partition_count(topic: str) -> int | None:
            metadata = log_manager.topic(topic)
            return None if metadata is None else metadata.num_partitions

        self.partition_states = PartitionStates(
            self.cluster, self.config.log_dir,
            lambda topic, partition: self.replica_manager.log_for(topic, partition).log_end_offset, partition_count)
        self.partition_states.load({name: metadata.num_partitions for name, metadata in log_manager.topics().items()})
        self.replica_manager.leader_epoch_of = self.partition_states.leader_epoch
        self.coordinators = CoordinatorRouting(self.cluster, self.partition_states, partition_count)
        self.follower_states = FollowerStates(self.partition_states, self.replica_manager.log_for,
                                              int(self.config["replica.lag.time.max.ms"]))
        self.partition_states.min_insync_replicas = lambda topic: int(
            self.replica_manager.log_for(topic, 0).config.min_insync_replicas)
        self.partition_states.unclean_leader_election_enable = lambda topic: bool(
            self.replica_manager.log_for(topic, 0).config.unclean_leader_election_enable)
        admin = AdminManager(self.log_manager, self.config, dynamic_config=self.dynamic_config,
                             log_cleaner=self.log_cleaner)
        admin.partition_states = self.partition_states
        producer_ids = self.log_manager.producer_ids()
        self._coordinators = LazyCoordinators(functools.partial(self._build_coordinators, admin, producer_ids))
        self.metrics.register_loop_owned(ShareGroupCollector(lambda: self.share_coordinator))
        authorizer = BrokerContext.authorizer_for(self.config)
        ctx = BrokerContext(
            config=self.config,
            cluster=self.cluster,
            partitions=self.partition_states,
            cluster_id=self.log_manager.cluster_id,
            replica_manager=self.replica_manager,
            admin=admin,
            producer_ids=producer_ids,
            lazy_coordinators=self._coordinators,
            fetch_manager=self.fetch_manager,
            authorizer=authorizer,
            scram_credentials=self.scram_credentials,
            quotas=self.quotas,
            coordinators=self.coordinators,
        )
        # The HTTP port is bound and listening before the Kafka listeners (a client that got a Metadata answer can
        # connect to it and scrape); its server starts at the first connection (_serve_admin_http).
        metrics_host = str(self.config["minikafka.metrics.host"])
        metrics_port = int(self.config["minikafka.metrics.port"])
        admin_sockets: list[socket.socket] = []
        if metrics_port >= 0:
            try:
                admin_sockets = bind_admin_port(metrics_host, metrics_port)
            except OSError as error:
                raise bind_error("minikafka.metrics.port", str(metrics_port), error,
                                 "choose another port (0: any free one, -1: no metrics/admin HTTP)") from None
        for broker_id in reversed(self.cluster.broker_ids):  # node.id last: a client that reached it finds all up
            broker_ctx = dataclasses.replace(ctx, config=self.cluster.nodes[broker_id].config)
            self._dispatchers[broker_id] = Dispatcher(broker_ctx, self.metrics)
            await self._start_broker_listeners(broker_id)
        # The cleaner threads start once the listeners do: their first pass over the logs does not compete with the
        # start path for the GIL (a round's core and worker process are imported by the round: LogCleaner).
        if self.config.cleaner.enable:
            self.log_cleaner.startup()
        if admin_sockets:
            self._admin_http_task = asyncio.create_task(
                self._serve_admin_http(metrics_host, admin_sockets, authorizer), name="minikafka-admin-http")
        if any(self.log_manager.topic(topic) is not None for topic in COORDINATOR_TOPICS):
            self._coordinators.get()  # their state is loaded whether or not a client asks (LazyCoordinators)
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
        if len(self.cluster.broker_ids) > 1:  # Kafka's isr-expiration task: every half replica.lag.time.max.ms
            self._schedule("isr-expiration", int(self.config["replica.lag.time.max.ms"]) // 2,
                           self._expire_lagging_followers)
        if self.config["auto.leader.rebalance.enable"] and len(self.cluster.broker_ids) > 1:
            self._schedule("leader-rebalance", int(self.config["leader.imbalance.check.interval.seconds"]) * 1000,
                           self._balance_leaders)
        flush_interval_ms = int(self.config["log.flush.scheduler.interval.ms"])
        if flush_interval_ms < 2**62:
            self._schedule("flush", flush_interval_ms, self._flush_dirty_logs)
        http = f"http://{metrics_host}:{admin_sockets[0].getsockname()[1]}" if admin_sockets else None
        log.info(
            "minikafka started: Kafka listeners %s, console %s, metrics %s, log dir %s",
            "; ".join((f"broker {node.node_id}: " if len(self.cluster.nodes) > 1 else "") + ", ".join(
                f"{ep.listener_name} ({ep.security_protocol}) {ep.host or '*'}:{ep.port}"
                for ep in node.config.listeners) for node in self.cluster.nodes.values()),
            f"{http}/" if http else "disabled", f"{http}/metrics" if http else "disabled", self.config.log_dir,
        )

    def _build_coordinators(self, admin: AdminManager, producer_ids: ProducerIdManager) -> CoordinatorSet:
        """Build the group, share-group and transaction coordinators and start loading their state (the first
        use of `LazyCoordinators`)."""
        from minikafka.broker.groups.group_coordinator import GroupCoordinator
        from minikafka.broker.groups.offsets_topic import ReplicaOffsetsTopic
        from minikafka.broker.groups.scheduler import LoopScheduler
        from minikafka.broker.share.share_coordinator import ShareCoordinator
        from minikafka.broker.transactions.transaction_coordinator import TransactionCoordinator
        from minikafka.broker.transactions.transaction_log import TRANSACTION_STATE_TOPIC
        from minikafka.broker.transactions.transaction_marker_writer import ReplicaTxnMarkerWriter
        from minikafka.broker.transactions.transaction_state_manager import TransactionStateManager

        group_coordinator = GroupCoordinator.for_broker(self.config.props, self.replica_manager, admin, self.clock)
        share_coordinator = ShareCoordinator.for_broker(
            self.config.props, group_coordinator.manager, group_coordinator.status, self.replica_manager,
            admin, self.clock)

        async def allocate_producer_id() -> int:
            return await asyncio.to_thread(producer_ids.next_producer_id)

        txn_coordinator = TransactionCoordinator(
            self.config.transactions,
            TransactionStateManager(
                self.config.transactions,
                ReplicaOffsetsTopic(self.replica_manager, admin, TRANSACTION_STATE_TOPIC),
                self.clock,
            ),
            ReplicaTxnMarkerWriter(self.replica_manager, group_coordinator),
            allocate_producer_id,
            LoopScheduler(),
            self.clock,
        )
        coordinators = CoordinatorSet(group_coordinator, share_coordinator, txn_coordinator)
        self._tasks.append(asyncio.create_task(self._load_coordinators(coordinators),
                                               name="minikafka-coordinator-load"))
        return coordinators

    @property
    def _built_coordinators(self) -> CoordinatorSet | None:
        return self._coordinators.built if self._coordinators is not None else None

    @property
    def group_coordinator(self) -> GroupCoordinator | None:
        """None until a request (or a log dir holding its state) built the coordinators."""
        return built.group if (built := self._built_coordinators) is not None else None

    @property
    def share_coordinator(self) -> ShareCoordinator | None:
        return built.share if (built := self._built_coordinators) is not None else None

    @property
    def txn_coordinator(self) -> TransactionCoordinator | None:
        return built.txn if (built := self._built_coordinators) is not None else None

    async def _serve_admin_http(self, host: str, sockets: list[socket.socket],
                                authorizer: StandardAuthorizer | None) -> None:
        """Start the metrics/admin/console HTTP server on the sockets bound at start-up, once a client connects to
        them. Its modules (aiohttp, the console: more CPU than the rest of the start) are imported then, in a worker
        thread while the event loop goes on answering Kafka requests (bench/startup.py). A failure here leaves the
        Kafka listeners serving."""
        try:
            await first_connection(sockets)
            await asyncio.to_thread(_import_admin_http_modules)
            from minikafka.broker.admin_auth import AdminAuthenticator
            from minikafka.broker.admin_http import AdminHttpServer
            from minikafka.broker.compaction_plans import CompactionPlanUploads
            from minikafka.broker.console import Console
            from minikafka.broker.erasure import Erasure
            from minikafka.broker.faults.fault_routes import FaultRoutes

            self.compaction_plans = CompactionPlanUploads(self.config.log_dir, self.log_cleaner)
            await asyncio.to_thread(self.compaction_plans.clear)
            # Once security is configured, /admin/* needs a super user's or a CLUSTER-ACL holder's credentials.
            admin_http = AdminHttpServer(
                host, sockets[0].getsockname()[1], self.metrics.registry,
                AdminAuthenticator.for_broker(self.config, self.scram_credentials, authorizer),
                tuple(self.config["minikafka.metrics.allowed.hosts"]), self.metrics.publish_loop_snapshots,
            )
            admin_http.body_routes[("POST", "/admin/compact")] = self._admin_compact
            admin_http.routes[("GET", "/admin/cleaner-state")] = self._admin_cleaner_state
            admin_http.routes[("POST", "/admin/erase")] = Erasure(
                self.log_manager, self.replica_manager, self.log_cleaner, self.clock).erase
            from minikafka.broker.faults.cluster_faults import ClusterFaults
            from minikafka.broker.faults.coordinator_faults import CoordinatorFaults

            assert self.coordinators is not None
            FaultRoutes(self.faults, ClusterFaults(self.cluster, self.partition_states, self.stop_broker,
                                                   self.start_broker, self.follower_states),
                        CoordinatorFaults(self.coordinators)).register(admin_http.routes)
            assert self._coordinators is not None
            coordinators = self._coordinators.get()  # the console shows groups: built with the console
            Console(self.log_manager, self.log_cleaner, self.clock, coordinators.group,
                    coordinators.share, self.faults, self._cluster_reader().read_model).register(admin_http)
            await admin_http.start(sockets)
            self.admin_http = admin_http
        except asyncio.CancelledError:  # shut down before it served
            for sock in sockets:
                sock.close()
            raise
        except Exception:
            for sock in sockets:
                sock.close()
            log.exception("The metrics/admin HTTP server did not start; the Kafka listeners keep serving")

    def _cluster_reader(self) -> ClusterReader:
        from minikafka.broker.cluster_reader import ClusterReader

        assert self.coordinators is not None
        def group_ids() -> Iterable[str]:
            coordinator = self.group_coordinator
            return coordinator.manager.groups if coordinator is not None else ()

        def transactional_ids() -> Iterable[str]:
            coordinator = self.txn_coordinator
            return coordinator.manager.transactions if coordinator is not None else ()

        return ClusterReader(self.cluster, self.partition_states, self.coordinators, group_ids, transactional_ids)

    async def _load_coordinators(self, coordinators: CoordinatorSet) -> None:
        """Groups first: completing a transaction left in Prepare* may write a marker to __consumer_offsets,
        which must land on loaded groups."""
        await self._load_groups(coordinators)
        txn_coordinator = coordinators.txn
        started = self.clock.monotonic_ms()
        try:
            await txn_coordinator.startup()
        except Exception:
            txn_coordinator.active = False
            log.exception("Loading transactions from __transaction_state failed; transactional requests get "
                          "COORDINATOR_NOT_AVAILABLE until restart")
            return
        log.info("Loaded %d transactional ids in %d ms", len(txn_coordinator.manager.transactions),
                 self.clock.monotonic_ms() - started)

    async def _load_groups(self, coordinators: CoordinatorSet) -> None:
        group_coordinator, share_coordinator = coordinators.group, coordinators.share
        started = self.clock.monotonic_ms()
        if share_coordinator is not None:
            try:
                await share_coordinator.load_state()
            except Exception:
                log.exception("Loading share-partition state from __share_group_state failed; share fetches get "
                              "COORDINATOR_LOAD_IN_PROGRESS until restart")
        try:
            await group_coordinator.startup()
        except Exception:
            # Serving groups from a partial load would hand out wrong offsets: refuse them instead.
            group_coordinator.active = False
            log.exception("Loading consumer groups from __consumer_offsets failed; group requests get "
                          "COORDINATOR_NOT_AVAILABLE until restart")
            return
        log.info("Loaded %d consumer groups in %d ms", len(group_coordinator.manager.groups),
                 self.clock.monotonic_ms() - started)
        if share_coordinator is not None:
            share_coordinator.on_groups_loaded()

    async def _bind_broker(self, broker_id: int, sasl_mechanisms: SaslMechanisms | None) -> None:
        """Open broker `broker_id`'s listening sockets (not serving yet); its advertised ports are then known."""
        node = self.cluster.nodes[broker_id]
        server = SocketServer(self._listeners(node.config), self.config.network_limits,
                              sasl_mechanisms=sasl_mechanisms)
        server.faults = self.faults.brokers[broker_id]
        await server.bind()
        node.config = node.config.with_bound_ports(server.bound_ports)
        # a port 0 listener keeps the port it got: start_broker reopens the same one
        node.config.listeners = tuple(endpoint.with_port(server.bound_ports[endpoint.listener_name])
                                      for endpoint in node.config.listeners)
        self.socket_servers[broker_id] = server

    async def _start_broker_listeners(self, broker_id: int) -> None:
        server = self.socket_servers[broker_id]
        server.disconnect_listeners.append(self._on_disconnect)
        await server.start(self._dispatchers[broker_id])

    def _on_disconnect(self, session: Session) -> None:
        """A closed connection ends its share sessions (once the coordinators are built: none before)."""
        share_coordinator = self.share_coordinator
        if share_coordinator is not None:
            share_coordinator.on_disconnect(session)

    async def stop_broker(self, broker_id: int) -> None:
        """Close broker `broker_id`'s listeners and connections; the partitions it led elect new leaders."""
        server = self.socket_servers.pop(broker_id)
        self.cluster.nodes[broker_id].running = False
        self.partition_states.broker_stopped(broker_id)
        await server.stop(0)
        log.info("Broker %d stopped (its listeners are closed)", broker_id)

    async def start_broker(self, broker_id: int) -> None:
        """Reopen broker `broker_id`'s listeners on the same ports; it rejoins the ISR of its partitions."""
        await self._bind_broker(broker_id, self._sasl_mechanisms())
        await self._start_broker_listeners(broker_id)
        self.cluster.nodes[broker_id].running = True
        self.partition_states.broker_started(broker_id)
        log.info("Broker %d started", broker_id)

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
        from minikafka.broker.security.sasl_authenticator import SaslMechanisms

        mechanisms = SaslMechanisms(self.config.props, self.scram_credentials)
        for name in sasl_listeners:
            mechanisms.listener(name)
        return mechanisms

    def _listeners(self, config: KafkaConfig) -> list[Listener]:
        """Every listener of `config` (one broker's) with, for SSL and SASL_SSL, its TLS context (key and trust stores
        are read here: a bad store stops the broker with the key and the reason)."""
        listeners = []
        for endpoint in config.listeners:
            ssl_config = self.config.ssl_configs.get(endpoint.listener_name)
            if ssl_config is None:
                listeners.append(Listener(endpoint))
            else:
                from minikafka.broker.security.ssl_factory import create_server_context

                listeners.append(Listener(endpoint, create_server_context(ssl_config), ssl_config.principal_mapper))
        return listeners

    def _schedule(self, name: str, interval_ms: int, action: Callable[[], Awaitable[None]]) -> None:
        if interval_ms <= 0:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000)
                # Shielded: cancelling the loop at shutdown must not abandon a flush or roll running in a thread;
                # shutdown waits for it (`_running_actions`) before it closes the logs.
                run = asyncio.ensure_future(action())
                self._running_actions.add(run)
                run.add_done_callback(self._running_actions.discard)
                try:
                    await asyncio.shield(run)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("periodic task %s failed; it will run again", name)

        self._tasks.append(asyncio.create_task(loop(), name=f"minikafka-{name}"))

    async def _expire_lagging_followers(self) -> None:
        self.follower_states.expire_lagging()

    async def _balance_leaders(self) -> None:
        """Kafka's controller's periodic preferred-leader elections (auto.leader.rebalance.enable)."""
        from minikafka.broker.leader_elections import balance_leaders

        balance_leaders(self.partition_states)

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
            assert self.compaction_plans is not None  # the route exists once _serve_admin_http made them
            return await self.compaction_plans.compact_exact(topic, partition, body, wait=wait, timeout_s=timeout_s)
        try:
            request = await admin_thread(self.log_cleaner.request_compaction, topic, partition)
        except UnknownTopicOrPartitionError as error:
            return reply(404, {"error": error.message or str(error)})
        except InvalidConfigError as error:
            return reply(400, {"error": error.message or str(error)})
        if wait:
            await wait_for_event(request.done, timeout_s)
        return reply(200 if request.done.is_set() else 202, request.to_json())

    async def _admin_cleaner_state(self, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        """`GET /admin/cleaner-state?topic=T`: cleaner checkpoints and compaction configs (broker/cleaner_state.py)."""
        from minikafka.broker.cleaner_state import cleaner_state

        topic = query.get("topic", [""])[0]
        if not topic:
            return 400, "application/json", b'{"error": "missing topic parameter"}\n'
        try:
            state = await admin_thread(
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
        await asyncio.gather(*self._running_actions, return_exceptions=True)  # their threads, before logs close
        if self.txn_coordinator is not None:
            self.txn_coordinator.shutdown()
        if self.group_coordinator is not None:
            self.group_coordinator.shutdown()
        if self.share_coordinator is not None:
            self.share_coordinator.shutdown()
        if self._admin_http_task is not None and not self._admin_http_task.done():
            self._admin_http_task.cancel()
            await asyncio.gather(self._admin_http_task, return_exceptions=True)
        grace_s = int(self.config["minikafka.shutdown.grace.ms"]) / 1000
        await asyncio.gather(*(server.stop(grace_s) for server in self.socket_servers.values()))
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


def _import_admin_http_modules() -> None:
    """Imports what `_serve_admin_http` uses (run in a worker thread; the imports below then find them loaded)."""
    import minikafka.broker.admin_auth
    import minikafka.broker.admin_http
    import minikafka.broker.cleaner_state
    import minikafka.broker.cluster_reader
    import minikafka.broker.compaction_plans
    import minikafka.broker.console
    import minikafka.broker.erasure
    import minikafka.broker.faults.cluster_faults
    import minikafka.broker.faults.fault_routes  # noqa: F401
