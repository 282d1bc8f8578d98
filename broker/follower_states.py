"""`FollowerStates`: the followers `pause_follower` holds back, and what Kafka's partition leader does about them.

Followers are simulated as caught up (`PartitionStates`); a paused one is not: its log end offset stays where it
was at the pause (the records appended after it are not on it), so
- the partition's high watermark is the lowest log end offset of its ISR (`UnifiedLog.high_watermark_cap`) and an
  `acks=all` Produce waits for it (`wait_for_high_watermark`, REQUEST_TIMED_OUT after the request's timeout);
- once the leader has records it lacks for `replica.lag.time.max.ms` since the pause (Kafka's
  `Replica.isCaughtUp`: the last time it had the whole log), `expire_lagging` (Kafka's isr-expiration task, every
  half of that) takes it out of the ISR and the high watermark moves on;
- `resume_follower` catches it up: it rejoins the ISR (when its broker runs);
- when it becomes the leader (an election from the ISR, or an unclean one), the log is truncated to its log end
  offset for real (`UnifiedLog.truncate_to`, as Kafka's followers truncate to the new leader): records only the old
  leader had are lost, as in Kafka (`acks=all` ones were never acknowledged: the high watermark waited).
A stopped broker's replicas fetch nothing either (`replica_stopped`): each keeps the log end offset it had at the
stop. Its broker's start catches it up when the partition has a leader (Kafka's follower fetches the rest); a
leaderless partition keeps it where it was, so when it is elected (from the ELR, or uncleanly) the log is truncated
to it as for a paused follower: the records written while it was stopped are lost, as in Kafka. When a leader is
elected the running replicas follow it (caught up), and the log end of every held-back replica is at most the new
leader's (past it, Kafka's follower truncates to the diverging offset).
A restart forgets the pauses and stops (every follower catches up). Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from minikafka.broker.partition_states import NO_LEADER, PartitionStates
from minikafka.protocol.errors import ErrorCode, UnknownTopicOrPartitionError
from minikafka.storage.unified_log import UnifiedLog

log = logging.getLogger(__name__)


@dataclass
class PausedFollower:
    #: the follower's log end offset: the records from here on are not on it
    log_end_offset: int
    #: Kafka's lastCaughtUpTimeMs: when it last had the whole log (the pause)
    caught_up_ms: int


class FollowerStates:
    """Owns the paused followers of every partition and the Produce requests waiting for a high watermark."""

    def __init__(self, partitions: PartitionStates, log_for: Callable[[str, int], UnifiedLog],
                 replica_lag_time_max_ms: int, now_ms: Callable[[], int] | None = None) -> None:
        self.partitions = partitions
        self._log_for = log_for
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self._now_ms = now_ms or (lambda: int(time.monotonic() * 1000))
        self._paused: dict[tuple[str, int], dict[int, PausedFollower]] = {}
        #: the log end offset of each replica of a stopped broker (or of a broker back while its partition has no
        #: leader), by partition
        self._stopped: dict[tuple[str, int], dict[int, int]] = {}
        self._waiters: dict[tuple[str, int], set[asyncio.Future[None]]] = {}
        partitions.followers = self
        partitions.is_lagging = self.is_lagging
        partitions.before_new_leader = self._before_new_leader
        partitions.after_isr_change = self._refresh_all
        partitions.replica_stopped = self._replica_stopped
        partitions.replica_started = self._replica_started

    # --- faults --------------------------------------------------------------------------------------------
    def pause(self, topic: str, partition: int, replica: int) -> None:
        state = self.partitions.get(topic, partition)
        if replica not in state.replicas:
            raise ValueError(f"broker {replica} is not a replica of {topic}-{partition} (replicas {state.replicas})")
        if replica == state.leader:
            raise ValueError(f"broker {replica} leads {topic}-{partition}: only a follower can be paused "
                             f"(elect_leader another replica first)")
        paused = self._paused.setdefault((topic, partition), {})
        if replica in paused:
            raise ValueError(f"the follower {replica} of {topic}-{partition} is already paused")
        paused[replica] = PausedFollower(self._log_for(topic, partition).log_end_offset, self._now_ms())
        log.info("Follower %d of %s-%d paused at offset %d", replica, topic, partition,
                 paused[replica].log_end_offset)
        self._refresh(topic, partition)

    def resume(self, topic: str, partition: int, replica: int) -> None:
        self.partitions.get(topic, partition)  # UNKNOWN_TOPIC_OR_PARTITION first
        paused = self._paused.get((topic, partition), {})
        if replica not in paused:
            raise ValueError(f"the follower {replica} of {topic}-{partition} is not paused")
        del paused[replica]
        if not paused:
            self._paused.pop((topic, partition), None)
        if self.partitions.cluster.is_running(replica):
            self.partitions.expand_isr(topic, partition, replica)
        log.info("Follower %d of %s-%d resumed: caught up and in the ISR", replica, topic, partition)
        self._refresh(topic, partition)

    def describe(self) -> list[dict[str, object]]:
        return [{"topic": topic, "partition": partition, "broker": replica, "log_end_offset": follower.log_end_offset}
                for (topic, partition), paused in sorted(self._paused.items())
                for replica, follower in sorted(paused.items())]

    # --- what the partition sees ---------------------------------------------------------------------------
    def is_lagging(self, topic: str, partition: int, replica: int) -> bool:
        """True when `replica` is paused behind the leader's log end (it may not rejoin the ISR)."""
        follower = self._paused.get((topic, partition), {}).get(replica)
        return follower is not None and follower.log_end_offset < self._log_for(topic, partition).log_end_offset

    def replica_log_end_offset(self, topic: str, partition: int, replica: int) -> int:
        """The log end offset of `replica` (paused, stopped or caught up)."""
        follower = self._paused.get((topic, partition), {}).get(replica)
        end = self._log_for(topic, partition).log_end_offset
        if follower is not None:
            end = min(end, follower.log_end_offset)
        return min(end, self._stopped.get((topic, partition), {}).get(replica, end))

    def expire_lagging(self) -> None:
        """Kafka's Partition.maybeShrinkIsr: a paused follower behind the log end for replica.lag.time.max.ms
        leaves the ISR."""
        now_ms = self._now_ms()
        for (topic, partition), paused in list(self._paused.items()):
            try:
                state = self.partitions.get(topic, partition)
            except UnknownTopicOrPartitionError:  # the topic was deleted: its followers with it
                del self._paused[(topic, partition)]
                continue
            leader_end = self._log_for(topic, partition).log_end_offset
            for replica, follower in paused.items():
                if replica in state.isr and follower.log_end_offset < leader_end and \
                        now_ms - follower.caught_up_ms > self.replica_lag_time_max_ms:
                    log.info("Follower %d of %s-%d is %d offsets behind for over %d ms: it leaves the ISR",
                             replica, topic, partition, leader_end - follower.log_end_offset,
                             self.replica_lag_time_max_ms)
                    self.partitions.shrink_isr(topic, partition, replica)
            self._refresh(topic, partition)

    async def wait_for_high_watermark(self, topic: str, partition: int, offset: int, timeout_s: float,
                                      leader_epoch: int) -> ErrorCode:
        """Kafka's DelayedProduce for one partition: wait until its high watermark reaches `offset` (an acks=all
        Produce's last offset + 1). NONE then, NOT_LEADER_OR_FOLLOWER when the leader changed first (the epoch
        is no longer `leader_epoch`), REQUEST_TIMED_OUT when `timeout_s` passed first."""
        log_ = self._log_for(topic, partition)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            if self.partitions.get(topic, partition).leader_epoch != leader_epoch:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            if log_.high_watermark >= offset:
                return ErrorCode.NONE
            remaining = deadline - loop.time()
            if remaining <= 0:
                return ErrorCode.REQUEST_TIMED_OUT
            waiter: asyncio.Future[None] = loop.create_future()
            waiters = self._waiters.setdefault((topic, partition), set())
            waiters.add(waiter)
            try:
                await asyncio.wait_for(waiter, remaining)
            except TimeoutError:
                pass  # checked once more above
            finally:
                waiters.discard(waiter)

    # --- internals -----------------------------------------------------------------------------------------
    def _replica_stopped(self, topic: str, partition: int, replica: int) -> None:
        """`replica`'s broker stops: it keeps the log end offset it has now (before its partitions elect)."""
        self._stopped.setdefault((topic, partition), {})[replica] = \
            self.replica_log_end_offset(topic, partition, replica)

    def _replica_started(self, topic: str, partition: int, replica: int) -> None:
        """`replica`'s broker is back (after the partition's elections): it catches up when there is a leader to
        fetch from, else it keeps its log end offset."""
        if self.partitions.get(topic, partition).leader != NO_LEADER:
            self._forget_stopped(topic, partition, replica)

    def _forget_stopped(self, topic: str, partition: int, replica: int) -> int | None:
        stopped = self._stopped.get((topic, partition))
        if not stopped or replica not in stopped:
            return None
        end = stopped.pop(replica)
        if not stopped:
            del self._stopped[(topic, partition)]
        return end

    def _before_new_leader(self, topic: str, partition: int, leader: int) -> None:
        """A paused follower or a stopped one's replica elected leader: the log is its log (truncated to its end);
        it follows no more, the other running replicas follow it. Any election wakes the Produces waiting on the
        partition (they answer NOT_LEADER_OR_FOLLOWER)."""
        self._wake(topic, partition)
        if leader == NO_LEADER:
            return
        paused = self._paused.get((topic, partition), {})
        ends = [end for end in (paused[leader].log_end_offset if leader in paused else None,
                                self._forget_stopped(topic, partition, leader)) if end is not None]
        paused.pop(leader, None)
        if not paused:
            self._paused.pop((topic, partition), None)
        if ends:
            removed = self._log_for(topic, partition).truncate_to(min(ends))
            log.warning("Partition %s-%d: new leader %d had the log up to offset %d: %d offset(s) truncated",
                        topic, partition, leader, min(ends), removed)
        new_end = self._log_for(topic, partition).log_end_offset
        for replica, end in list(self._stopped.get((topic, partition), {}).items()):
            if self.partitions.cluster.is_running(replica):
                self._forget_stopped(topic, partition, replica)
            else:
                self._stopped[(topic, partition)][replica] = min(end, new_end)
        for follower in paused.values():
            follower.log_end_offset = min(follower.log_end_offset, new_end)
        self._refresh(topic, partition)

    def _refresh_all(self) -> None:
        for topic, partition in list(self._stopped):
            if self.partitions.partition_count(topic) is None:  # the topic was deleted: its replicas with it
                del self._stopped[(topic, partition)]
        for topic, partition in list(self._paused):
            try:
                self._refresh(topic, partition)
            except UnknownTopicOrPartitionError:  # the topic was deleted: its followers with it
                del self._paused[(topic, partition)]

    def _refresh(self, topic: str, partition: int) -> None:
        """Set the high watermark's cap from the paused followers in the ISR and wake the waiting Produces."""
        state = self.partitions.get(topic, partition)
        paused = self._paused.get((topic, partition), {})
        ends = [follower.log_end_offset for replica, follower in paused.items() if replica in state.isr]
        self._log_for(topic, partition).high_watermark_cap = min(ends) if ends else None
        self._wake(topic, partition)

    def _wake(self, topic: str, partition: int) -> None:
        for waiter in self._waiters.get((topic, partition), ()):
            if not waiter.done():
                waiter.set_result(None)
