package minikafka.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A share-group lock that times out, with two KafkaShareConsumers (KIP-932) of one group, for the side-by-side
 * share-group tests. The topic's records are already produced and the group set to share.auto.offset.reset=earliest
 * with a short share.record.lock.duration.ms by the caller.
 *
 * Usage: ShareLockTimeoutClient BOOTSTRAP TOPIC GROUP
 *
 * The holder (explicit acknowledgement) polls until it has records, then neither acknowledges nor polls again. The
 * taker (explicit) polls until it has records, accepts them, and polls 3 s more for anything delivered again.
 * Prints one JSON line: {"holder":[["v",1],...],"taker":[["v",2,MS],...]} where MS is the time in milliseconds from
 * the holder's records to the taker's.
 */
public final class ShareLockTimeoutClient {
    private ShareLockTimeoutClient() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("share.acknowledgement.mode", "explicit");
        List<String> holder = new ArrayList<>();
        List<String> taker = new ArrayList<>();
        try (KafkaShareConsumer<String, String> first = new KafkaShareConsumer<>(props);
             KafkaShareConsumer<String, String> second = new KafkaShareConsumer<>(props)) {
            first.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (holder.isEmpty()) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the holder never received a record");
                }
                for (ConsumerRecord<String, String> record : first.poll(Duration.ofMillis(500))) {
                    holder.add("[\"" + record.value() + "\"," + record.deliveryCount().orElse((short) -1) + "]");
                }
            }
            long heldAt = System.currentTimeMillis();
            second.subscribe(List.of(topic));
            long quietUntil = heldAt + 60_000;
            while (System.currentTimeMillis() < quietUntil) {
                for (ConsumerRecord<String, String> record : second.poll(Duration.ofMillis(500))) {
                    taker.add("[\"" + record.value() + "\"," + record.deliveryCount().orElse((short) -1) + ","
                        + (System.currentTimeMillis() - heldAt) + "]");
                    second.acknowledge(record, AcknowledgeType.ACCEPT);
                    quietUntil = System.currentTimeMillis() + 3_000;
                }
                second.commitSync();
            }
        }
        System.out.println("{\"holder\":[" + String.join(",", holder) + "],\"taker\":[" + String.join(",", taker)
            + "]}");
    }
}
