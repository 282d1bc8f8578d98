"""`PartitionStates`: every partition's replicas, ISR, leader, leader epoch and leader-epoch history, for the
brokers of this process (`Cluster`), and the leader elections `stop_broker`, `start_broker` and `elect_leader`
cause.

One copy of the data is kept; the followers are simulated as caught up, so a running replica is in sync and the
high watermark is the log end offset, unless `pause_follower` holds one back (`FollowerStates`). The rules are
Kafka's (KRaft controller):
- a new partition's replicas come from `replica_placer`; its ISR is its running replicas, its leader the first of
  them, epoch 0;
- a stopped broker leaves every ISR; a partition it led elects the first running ISR member in replica order
  (epoch + 1), or, when it was the last ISR member, the first running replica if the topic has
  unclean.leader.election.enable (an unclean election: the ISR is that replica alone), else goes leaderless
  (leader -1, epoch + 1, an empty ISR);
- KIP-966's ELR as Kafka 4.3 keeps it by default: while the ISR is smaller than min.insync.replicas the members
  that left it are eligible leaders; the last leader of a partition whose ISR emptied is its last known ELR;
- a started broker rejoins the ISR of every partition it is a replica of (not while a paused follower of it lags);
  a leaderless partition with an empty ISR elects it when it is in the ELR (epoch + 1; the running replicas
  rejoin), or uncleanly with unclean.leader.election.enable (Kafka's handleBrokerUnfenced; the ISR is it alone),
  else stays leaderless;
- a paused follower, or a replica that was stopped and has not caught up since (its partition had no leader),
  elected leader truncates the log to its end first (`before_new_leader`);
- each new leader epoch starts at the log end offset (Kafka's `maybeAssignEpochStartOffset`), which is what
  OffsetsForLeaderEpoch answers from (`LeaderEpochFileCache.endOffsetFor`).
A partition without a recorded state (a log dir from before this file, an internal topic) gets one replica, the
coordinator broker. Persisted to `partition-states.json` in the log dir at every change (written whole, replaced
atomically); a restart starts every broker, so every replica rejoins its ISR. Event-loop thread only.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from minikafka.broker.cluster import Cluster
from minikafka.broker.replica_placer import place_replicas
from minikafka.protocol.errors import (
    FencedLeaderEpochError,
    InvalidReplicaAssignmentError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)

if TYPE_CHECKING:
    from minikafka.broker.follower_states import FollowerStates

log = logging.getLogger(__name__)

STATE_FILE = "partition-states.json"
NO_LEADER = -1


@dataclass
class PartitionState:
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    #: [leader epoch, start offset] pairs, ascending (Kafka's leader-epoch-checkpoint)
    epochs: list[list[int]] = field(default_factory=lambda: [[0, 0]])
    #: KIP-966: the replicas that left an ISR smaller than min.insync.replicas (they have every committed record)
    elr: list[int] = field(default_factory=list)
    #: KIP-966 as Kafka 4.3 keeps it by default: the last leader, while the ISR is empty
    last_known_elr: list[int] = field(default_factory=list)


class PartitionStates:
    """Owns the state of every partition of every topic of `log_manager`'s log dir."""

    def __init__(self, cluster: Cluster, log_dir: Path, log_end_offset: Callable[[str, int], int],
                 partition_count: Callable[[str], int | None]) -> None:
        self.cluster = cluster
        self.path = Path(log_dir) / STATE_FILE
        self._log_end_offset = log_end_offset
        self._partition_count = partition_count
        self._states: dict[str, list[PartitionState]] = {}
        #: `FollowerStates`' hooks: a paused follower behind the log end may not rejoin the ISR; a paused follower
        #: elected leader truncates the log to its own end first
        self.is_lagging: Callable[[str, int, int], bool] = lambda topic, partition, replica: False
        self.before_new_leader: Callable[[str, int, int], None] = lambda topic, partition, leader: None
        #: called after a broker's stop or start changed the partitions' ISRs (the high watermark may move)
        self.after_isr_change: Callable[[], None] = lambda: None
        #: `FollowerStates`' hooks: a replica of a stopping broker keeps its log end offset (called before the
        #: partition's elections); a replica of a started broker catches up if its partition has a leader (after)
        self.replica_stopped: Callable[[str, int, int], None] = lambda topic, partition, replica: None
        self.replica_started: Callable[[str, int, int], None] = lambda topic, partition, replica: None
        #: the paused followers (set by `FollowerStates`): what an acks=all Produce waits on
        self.followers: FollowerStates | None = None
        #: the topic's min.insync.replicas (the ISR size below which KIP-966's ELR is kept)
        self.min_insync_replicas: Callable[[str], int] = lambda topic: 1
        #: whether a topic allows an unclean election when its last in-sync replica stops
        self.unclean_leader_election_enable: Callable[[str], bool] = lambda topic: False

    # --- persistence ---------------------------------------------------------------------------------------
    def load(self, topics: dict[str, int]) -> None:
        """Read the file (if any) for `topics` (name -> partition count); every broker is running now, so every
        replica is in sync again and a partition without a running leader elects one."""
        saved: dict[str, list[dict[str, object]]] = {}
        if self.path.exists():
            try:
                saved = json.loads(self.path.read_text())["partitions"]
            except (OSError, ValueError, KeyError, TypeError) as error:
                log.warning("Ignoring unreadable %s (%s): partitions get one replica on broker %d", self.path, error,
                            self.cluster.coordinator_id)
        known = set(self.cluster.broker_ids)
        for topic, count in topics.items():
            states = []
            for index, raw in enumerate(saved.get(topic, [])[:count]):
                state = PartitionState(**raw)  # type: ignore[arg-type]
                state.replicas = [replica for replica in state.replicas if replica in known] or \
                    [self.cluster.coordinator_id]
                state.isr = list(state.replicas)
                state.elr, state.last_known_elr = [], []
                if state.leader not in state.replicas:
                    self._new_leader(topic, index, state, state.replicas[0])
                states.append(state)
            self._states[topic] = states
        self._save()

    def _save(self) -> None:
        body = {"version": 1, "partitions": {topic: [asdict(state) for state in states]
                                             for topic, states in sorted(self._states.items())}}
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(body))
        os.replace(temporary, self.path)

    # --- reading -------------------------------------------------------------------------------------------
    def get(self, topic: str, partition: int) -> PartitionState:
        """The partition's state; UNKNOWN_TOPIC_OR_PARTITION when the topic has no such partition."""
        states = self._states.get(topic)
        if states is not None and 0 <= partition < len(states):  # Produce's path: no registry lock
            return states[partition]
        count = self._partition_count(topic)
        if count is None or not 0 <= partition < count:
            raise UnknownTopicOrPartitionError(f"This server does not host this topic-partition: {topic}-{partition}")
        states = self._states.setdefault(topic, [])
        if len(states) > count:
            del states[count:]
        if partition >= len(states):
            while len(states) < count:
                coordinator = self.cluster.coordinator_id
                states.append(PartitionState([coordinator], [coordinator], coordinator))
            self._save()
        return states[partition]

    def partition_count(self, topic: str) -> int | None:
        """The topic's partition count; None when there is no such topic."""
        return self._partition_count(topic)

    def items(self) -> list[tuple[str, list[PartitionState]]]:
        """Every topic's partition states, by topic name (a copy of the outer lists)."""
        return [(topic, list(states)) for topic, states in sorted(self._states.items())]

    def leader_epoch(self, topic: str, partition: int) -> int:
        return self.get(topic, partition).leader_epoch

    def offline_replicas(self, state: PartitionState) -> list[int]:
        return [replica for replica in state.replicas if not self.cluster.is_running(replica)]

    def require_leader(self, topic: str, partition: int, broker_id: int, current_leader_epoch: int = -1,
                       follower_allowed: bool = False) -> PartitionState:
        """Kafka's getPartitionOrException + localLogWithEpochOrThrow: NOT_LEADER_OR_FOLLOWER unless `broker_id`
        leads the partition (or, with `follower_allowed`, is one of its replicas); then the client's leader
        epoch: newer than ours UNKNOWN_LEADER_EPOCH, older FENCED_LEADER_EPOCH (-1: not checked)."""
        state = self.get(topic, partition)
        if broker_id != state.leader and not (follower_allowed and broker_id in state.replicas):
            raise NotLeaderOrFollowerError(f"Leader not local for partition {topic}-{partition} on broker "
                                           f"{broker_id}")
        if current_leader_epoch >= 0:
            if current_leader_epoch > state.leader_epoch:
                raise UnknownLeaderEpochError(f"leader epoch {current_leader_epoch} of {topic}-{partition} is "
                                              f"newer than the current {state.leader_epoch}")
            if current_leader_epoch < state.leader_epoch:
                raise FencedLeaderEpochError(f"leader epoch {current_leader_epoch} of {topic}-{partition} is "
                                             f"older than the current {state.leader_epoch}")
        return state

    def epoch_for_offset(self, topic: str, partition: int, offset: int) -> int:
        """The leader epoch the batch at `offset` was written in (the latest entry starting at or before it)."""
        epochs = self.get(topic, partition).epochs
        return next((epoch for epoch, start in reversed(epochs) if start <= offset), epochs[0][0] if epochs else -1)

    def end_offset_for_epoch(self, topic: str, partition: int, requested_epoch: int) -> tuple[int, int]:
        """Kafka's LeaderEpochFileCache.endOffsetFor: (epoch, end offset) of `requested_epoch`."""
        epochs = self.get(topic, partition).epochs
        if requested_epoch < 0 or not epochs:
            return -1, -1
        if epochs[-1][0] == requested_epoch:
            return requested_epoch, self._log_end_offset(topic, partition)
        higher = next((entry for entry in epochs if entry[0] > requested_epoch), None)
        if higher is None:
            return -1, -1
        floor = [entry for entry in epochs if entry[0] <= requested_epoch]
        return (floor[-1][0] if floor else requested_epoch), higher[1]

    # --- topics --------------------------------------------------------------------------------------------
    def check_assignment(self, replication_factor: int, assignments: Sequence[Sequence[int]]) -> None:
        """CreateTopics/CreatePartitions' checks of the replication factor and explicit replica lists."""
        if assignments:
            for replicas in assignments:
                unknown = [broker for broker in replicas if broker not in self.cluster.nodes]
                if unknown or not replicas or len(set(replicas)) != len(replicas):
                    raise InvalidReplicaAssignmentError(
                        f"The manual partition assignment {list(replicas)} names unknown or repeated brokers "
                        f"(the brokers are {', '.join(map(str, self.cluster.broker_ids))})")
            return
        if replication_factor != -1:
            self._place(1, replication_factor)  # raises INVALID_REPLICATION_FACTOR with Kafka's message

    def add_partitions(self, topic: str, first: int, count: int, replication_factor: int,
                       assignments: Sequence[Sequence[int]] = ()) -> None:
        """Give partitions first..count-1 of `topic` their replicas (explicit, or placed), replacing any default a
        request gave them while the topic was being created."""
        states = self._states.setdefault(topic, [])[:first]
        self._states[topic] = states
        new = count - first
        placements = [list(replicas) for replicas in assignments] if assignments else \
            self._place(new, replication_factor)
        for replicas in placements[:new]:
            isr = [replica for replica in replicas if self.cluster.is_running(replica)]
            states.append(PartitionState(list(replicas), isr or list(replicas[:1]), isr[0] if isr else NO_LEADER))
        self._save()

    def replication_factor(self, topic: str) -> int:
        states = self._states.get(topic)
        return len(states[0].replicas) if states else 1

    def forget_topic(self, topic: str) -> None:
        if self._states.pop(topic, None) is not None:
            self._save()

    def _place(self, num_partitions: int, replication_factor: int) -> list[list[int]]:
        running = self.cluster.running_ids()
        stopped = [broker for broker in self.cluster.broker_ids if broker not in running]
        return place_replicas(num_partitions, replication_factor, running, stopped)

    # --- elections -----------------------------------------------------------------------------------------
    def elect(self, topic: str, partition: int, broker_id: int) -> PartitionState:
        """Make running in-sync replica `broker_id` the leader (epoch + 1); nothing when it already leads."""
        state = self.get(topic, partition)
        if broker_id not in state.replicas:
            raise ValueError(f"broker {broker_id} is not a replica of {topic}-{partition} (replicas "
                             f"{state.replicas})")
        if not self.cluster.is_running(broker_id):
            raise ValueError(f"broker {broker_id} is stopped: start_broker({broker_id}) first")
        if broker_id != state.leader:
            self.change_leader(topic, partition, broker_id)
        return state

    def change_leader(self, topic: str, partition: int, leader: int, isr: list[int] | None = None) -> PartitionState:
        """An election's outcome (`leader_elections`): `leader` leads from a new epoch, with `isr` if given."""
        state = self.get(topic, partition)
        if isr is not None:  # an unclean election: Kafka clears the ELR
            state.isr = list(isr)
            state.elr, state.last_known_elr = [], []
        elif state.leader == NO_LEADER and leader != NO_LEADER and not state.isr:
            self._set_isr(topic, state, self._running_in_sync(topic, partition, state, leader))
        self._new_leader(topic, partition, state, leader)
        self._save()
        return state

    def shrink_isr(self, topic: str, partition: int, replica: int) -> None:
        """A follower that fell behind leaves the ISR (never its last member)."""
        state = self.get(topic, partition)
        if replica in state.isr and len(state.isr) > 1:
            self._set_isr(topic, state, [member for member in state.isr if member != replica])
            self._save()

    def expand_isr(self, topic: str, partition: int, replica: int) -> None:
        """A follower that caught up rejoins the ISR of a partition with a leader, or, in the ELR of a leaderless
        one, is elected (KIP-966)."""
        state = self.get(topic, partition)
        if state.leader == NO_LEADER and not state.isr:
            if replica in state.elr:
                self._elect_from_elr(topic, partition, state, replica)
                self._save()
            return
        if replica not in state.isr:
            self._set_isr(topic, state, [member for member in state.replicas
                                         if member in state.isr or member == replica])
        if state.leader == NO_LEADER:
            self._new_leader(topic, partition, state, replica)
        self._save()

    def _set_isr(self, topic: str, state: PartitionState, isr: list[int]) -> None:
        """Kafka's PartitionChangeBuilder.maybePopulateTargetElr (KIP-966, on by default in Kafka 4.3): while the
        ISR is smaller than min.insync.replicas, the members that left it join the ELR; at or above it the ELR
        and the last known ELR are cleared."""
        previous = state.isr
        state.isr = list(isr)
        if len(state.isr) >= self.min_insync_replicas(topic):
            state.elr, state.last_known_elr = [], []
            return
        candidates = set(state.elr) | set(previous)
        state.elr = [replica for replica in state.replicas if replica in candidates and replica not in state.isr]

    def _running_in_sync(self, topic: str, partition: int, state: PartitionState, leader: int) -> list[int]:
        """The ISR under a new leader of a leaderless partition: it, and every running follower not held back."""
        return [replica for replica in state.replicas if replica == leader or (
            self.cluster.is_running(replica) and not self.is_lagging(topic, partition, replica))]

    def _elect_from_elr(self, topic: str, partition: int, state: PartitionState, leader: int) -> None:
        """An ELR member of a leaderless partition with an empty ISR returns: it leads (Kafka's
        isValidNewLeader), the running followers rejoin."""
        state.elr = [replica for replica in state.elr if replica != leader]
        state.last_known_elr = []
        self._set_isr(topic, state, self._running_in_sync(topic, partition, state, leader))
        self._new_leader(topic, partition, state, leader)

    def broker_stopped(self, broker_id: int) -> None:
        for topic, states in self._states.items():
            for index, state in enumerate(states):
                if broker_id in state.replicas:
                    self.replica_stopped(topic, index, broker_id)
                if broker_id not in state.isr:
                    continue
                remaining = [replica for replica in state.isr if replica != broker_id]
                leader = state.leader
                if leader == broker_id:
                    leader = remaining[0] if remaining else self._unclean_leader(topic, state, broker_id)
                if not remaining and leader != NO_LEADER:  # unclean: the ISR is the new leader alone, no ELR
                    state.isr, state.elr, state.last_known_elr = [leader], [], []
                else:
                    # KIP-966 (Kafka 4.3's default): the ISR may become empty; its last member is then in the ELR
                    # and, as the last leader, the last known ELR
                    self._set_isr(topic, state, remaining)
                    if not remaining:
                        state.last_known_elr = [broker_id]
                if state.leader == broker_id:
                    self._new_leader(topic, index, state, leader)
        self._save()
        self.after_isr_change()

    def _unclean_leader(self, topic: str, state: PartitionState, stopped: int) -> int:
        """Kafka's unclean election when the last in-sync replica stops: the first running replica, if the topic
        has unclean.leader.election.enable (else none: the partition goes leaderless)."""
        if not self.unclean_leader_election_enable(topic):
            return NO_LEADER
        return next((replica for replica in state.replicas
                     if replica != stopped and self.cluster.is_running(replica)), NO_LEADER)

    def broker_started(self, broker_id: int) -> None:
        for topic, states in self._states.items():
            for index, state in enumerate(states):
                if broker_id not in state.replicas:
                    continue
                if self.is_lagging(topic, index, broker_id):
                    pass  # a paused follower behind the log end stays out until resume_follower
                elif state.leader == NO_LEADER and not state.isr:
                    if broker_id in state.elr:
                        self._elect_from_elr(topic, index, state, broker_id)
                    elif self.unclean_leader_election_enable(topic):
                        # Kafka's handleBrokerUnfenced: an UNCLEAN election for the leaderless partitions
                        unclean = self._unclean_leader(topic, state, NO_LEADER)
                        log.warning("Partition %s-%d: unclean election of replica %d (out of the ISR): records it "
                                    "lacks are lost", topic, index, unclean)
                        state.isr, state.elr, state.last_known_elr = [unclean], [], []
                        self._new_leader(topic, index, state, unclean)
                    # else it waits, out of the ISR, for an ELR member (KIP-966)
                else:
                    if broker_id not in state.isr:
                        self._set_isr(topic, state, [replica for replica in state.replicas
                                                     if replica in state.isr or replica == broker_id])
                    if state.leader == NO_LEADER:
                        self._new_leader(topic, index, state, broker_id)
                self.replica_started(topic, index, broker_id)
        self._save()
        self.after_isr_change()

    def _new_leader(self, topic: str, partition: int, state: PartitionState, leader: int) -> None:
        self.before_new_leader(topic, partition, leader)
        state.leader = leader
        state.leader_epoch += 1
        if leader == NO_LEADER:
            return
        state.last_known_elr = []  # Kafka's maybeUpdateLastKnownLeader: cleared once there is a leader
        start_offset = self._log_end_offset(topic, partition)
        # Kafka's LeaderEpochFileCache.assign: entries at or after the new start offset are superseded
        state.epochs = [entry for entry in state.epochs if entry[1] < start_offset] + \
            [[state.leader_epoch, start_offset]]
        log.info("Partition %s-%d: leader %d, epoch %d, ISR %s", topic, partition, leader, state.leader_epoch,
                 state.isr)
