"""`ClusterFaults`: the faults that change the cluster rather than one request, for the brokers of this process
(`minikafka.brokers`):
- `elect_leader(topic, partition, id)`: running in-sync replica `id` becomes the partition's leader (epoch + 1);
- `stop_broker(id)`: broker `id` closes its listeners and drops its connections (its port refuses connections,
  as a dead broker's); it leaves every ISR, and the partitions it led elect the next in-sync replica (epoch + 1)
  or, when it was the last one, go leaderless (leader -1, an empty ISR, it eligible) or elect an out-of-sync
  replica (unclean.leader.election.enable);
- `start_broker(id)`: its listeners reopen on the same ports; it rejoins the ISR of its partitions that have a
  leader and leads the leaderless ones it is an eligible leader replica of (KIP-966), or any of them with
  unclean.leader.election.enable (its log as it was at the stop: `FollowerStates`);
- `pause_follower(topic, partition, id)` / `resume_follower(...)`: follower `id` stops following / catches up
  (`FollowerStates`).
Input is validated here (a `FaultInputError` names the mistake: an unknown broker, topic or partition, stopping a
stopped broker or the last running one, starting a broker whose port another process took meanwhile). Event-loop
thread only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from minikafka.broker.cluster import Cluster
from minikafka.broker.faults.fault_names import FaultInputError
from minikafka.broker.follower_states import FollowerStates
from minikafka.broker.partition_states import PartitionStates
from minikafka.broker.startup_error import StartupError
from minikafka.protocol.errors import UnknownTopicOrPartitionError

BrokerAction = Callable[[int], Awaitable[None]]


class ClusterFaults:
    """Elections and broker stops/starts; `stop`/`start` are the server's (they own the listeners)."""

    def __init__(self, cluster: Cluster, partitions: PartitionStates, stop: BrokerAction, start: BrokerAction,
                 followers: FollowerStates | None = None) -> None:
        self.cluster = cluster
        self.partitions = partitions
        self.followers = followers
        self._stop = stop
        self._start = start

    def elect_leader(self, topic: str, partition: str | int, broker: str | int) -> None:
        broker_id = self._broker_id(broker)
        index = _integer("partition", partition)
        try:
            self.partitions.elect(topic, index, broker_id)
        except UnknownTopicOrPartitionError:
            raise FaultInputError(f"unknown partition {topic}-{index}") from None
        except ValueError as error:
            raise FaultInputError(str(error)) from None

    def pause_follower(self, topic: str, partition: str | int, broker: str | int) -> None:
        self._follower_change("pause", topic, partition, broker)

    def resume_follower(self, topic: str, partition: str | int, broker: str | int) -> None:
        self._follower_change("resume", topic, partition, broker)

    def _follower_change(self, change: str, topic: str, partition: str | int, broker: str | int) -> None:
        broker_id = self._broker_id(broker)
        index = _integer("partition", partition)
        if self.followers is None:
            raise FaultInputError("this broker has no followers to pause")
        try:
            getattr(self.followers, change)(topic, index, broker_id)
        except UnknownTopicOrPartitionError:
            raise FaultInputError(f"unknown partition {topic}-{index}") from None
        except ValueError as error:
            raise FaultInputError(str(error)) from None

    async def stop_broker(self, broker: str | int) -> None:
        broker_id = self._broker_id(broker)
        running = self.cluster.running_ids()
        if broker_id not in running:
            raise FaultInputError(f"broker {broker_id} is already stopped")
        if running == [broker_id]:
            raise FaultInputError(f"broker {broker_id} is the last running broker: start another one first")
        await self._stop(broker_id)

    async def start_broker(self, broker: str | int) -> None:
        broker_id = self._broker_id(broker)
        if self.cluster.is_running(broker_id):
            raise FaultInputError(f"broker {broker_id} is already running")
        try:
            await self._start(broker_id)
        except (StartupError, OSError) as error:  # its port was taken while it was stopped: it stays stopped
            raise FaultInputError(f"broker {broker_id} cannot listen again: {error}") from None

    def describe(self) -> dict[str, Any]:
        return {"stopped_brokers": [broker for broker in self.cluster.broker_ids
                                    if not self.cluster.is_running(broker)],
                "paused_followers": self.followers.describe() if self.followers is not None else []}

    def _broker_id(self, broker: str | int) -> int:
        broker_id = _integer("broker id", broker)
        if broker_id not in self.cluster.nodes:
            raise FaultInputError(f"unknown broker {broker_id}: the brokers are "
                                  f"{', '.join(str(known) for known in self.cluster.broker_ids)}")
        return broker_id


def _integer(what: str, value: str | int) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise FaultInputError(f"{what} must be an integer, got {value!r}") from None
