package minikafka.interop;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One KafkaShareConsumer (KIP-932) scenario against one broker, for the side-by-side share-group tests.
 *
 * Usage: ShareConsumerClient BOOTSTRAP TOPIC GROUP explicit|implicit
 *
 * The share partition starts at share.auto.offset.reset=latest (Kafka's default), so the client first produces
 * "marker" records until it receives one (accepting markers), then produces accept, release, reject, accept-too.
 * explicit: ACCEPT accept and accept-too, RELEASE release on its first delivery (ACCEPT on the next), REJECT
 * reject. implicit: every record accepted by the next poll. Then it polls 5 s more for anything delivered again.
 * Prints one JSON line: {"deliveries":[["accept",1],...]} in delivery order (markers left out).
 */
public final class ShareConsumerClient {
    private ShareConsumerClient() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        boolean explicit = args[3].equals("explicit");
        Properties producerProps = new Properties();
        producerProps.put("bootstrap.servers", bootstrap);
        producerProps.put("key.serializer", ByteArraySerializer.class.getName());
        producerProps.put("value.serializer", ByteArraySerializer.class.getName());
        producerProps.put("linger.ms", "0");
        Properties consumerProps = new Properties();
        consumerProps.put("bootstrap.servers", bootstrap);
        consumerProps.put("group.id", group);
        consumerProps.put("key.deserializer", StringDeserializer.class.getName());
        consumerProps.put("value.deserializer", StringDeserializer.class.getName());
        consumerProps.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        List<String> deliveries = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps);
             KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(consumerProps)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            boolean warm = false;
            while (!warm) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the share consumer never received a record");
                }
                send(producer, topic, "marker");
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    warm = true;
                    if (explicit) {
                        consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                    }
                }
                if (explicit) {
                    consumer.commitSync();
                }
            }
            for (String value : List.of("accept", "release", "reject", "accept-too")) {
                send(producer, topic, value);
            }
            long quietUntil = System.currentTimeMillis() + 15_000;
            int seen = 0;
            while (System.currentTimeMillis() < quietUntil) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    String value = record.value();
                    int count = record.deliveryCount().map(Short::intValue).orElse(-1);
                    if (!value.equals("marker")) {
                        deliveries.add("[\"" + value + "\"," + count + "]");
                        if (++seen >= (explicit ? 5 : 4)) {
                            quietUntil = Math.min(quietUntil, System.currentTimeMillis() + 5_000);
                        }
                    }
                    if (explicit) {
                        AcknowledgeType type = AcknowledgeType.ACCEPT;
                        if (value.equals("release") && count == 1) {
                            type = AcknowledgeType.RELEASE;
                        } else if (value.equals("reject")) {
                            type = AcknowledgeType.REJECT;
                        }
                        consumer.acknowledge(record, type);
                    }
                }
                consumer.commitSync();
            }
        }
        System.out.println("{\"deliveries\":[" + String.join(",", deliveries) + "]}");
    }

    private static void send(KafkaProducer<byte[], byte[]> producer, String topic, String value) throws Exception {
        producer.send(new ProducerRecord<>(topic, 0, null, value.getBytes(StandardCharsets.UTF_8))).get();
    }
}
