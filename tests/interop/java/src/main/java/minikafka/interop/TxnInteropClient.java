package minikafka.interop;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Transaction scenario for the Java client on one single-partition topic, printing one JSON summary line:
 * commit 3 records ("c0".."c2"), abort 2 ("a0", "a1"), then commit 2 more ("c3", "c4") together with the offset
 * 5 for --group (sendOffsetsToTransaction); then a second producer with the same transactional.id fences the
 * first one mid-transaction. Reports what read_committed and read_uncommitted consumers see, the group's
 * committed offset, and the exception the fenced producer got.
 */
public final class TxnInteropClient {
    private TxnInteropClient() {}

    public static void main(String[] argv) throws Exception {
        String bootstrap = argv[0];
        String topic = argv[1];
        String group = argv[2];
        String transactionalId = argv[3];
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        TopicPartition partition = new TopicPartition(topic, 0);
        try (KafkaProducer<byte[], byte[]> producer = producer(bootstrap, transactionalId)) {
            producer.initTransactions();
            send(producer, topic, "c0", "c1", "c2");
            producer.commitTransaction();
            send(producer, topic, "a0", "a1");
            producer.flush();
            producer.abortTransaction();
            send(producer, topic, "c3", "c4");
            producer.sendOffsetsToTransaction(Map.of(partition, new OffsetAndMetadata(5)),
                new ConsumerGroupMetadata(group));
            producer.commitTransaction();
        }
        String fenced = "none";
        try (KafkaProducer<byte[], byte[]> zombie = producer(bootstrap, transactionalId)) {
            zombie.initTransactions();
            send(zombie, topic, "zombie");
            zombie.flush();
            try (KafkaProducer<byte[], byte[]> successor = producer(bootstrap, transactionalId)) {
                successor.initTransactions();
                try {
                    zombie.commitTransaction();
                } catch (Exception e) {
                    fenced = e.getClass().getSimpleName();
                }
            }
        }
        List<String> committed = read(bootstrap, partition, "read_committed", 5);
        List<String> uncommitted = read(bootstrap, partition, "read_uncommitted", 8);
        long groupOffset = -1;
        Properties props = consumerProps(bootstrap, "read_committed");
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            OffsetAndMetadata offset = consumer.committed(Collections.singleton(partition)).get(partition);
            groupOffset = offset == null ? -1 : offset.offset();
        }
        System.out.println("{\"read_committed\":" + json(committed) + ",\"read_uncommitted\":" + json(uncommitted)
            + ",\"group_offset\":" + groupOffset + ",\"fenced\":\"" + fenced + "\"}");
    }

    private static KafkaProducer<byte[], byte[]> producer(String bootstrap, String transactionalId) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return new KafkaProducer<>(props);
    }

    private static void send(KafkaProducer<byte[], byte[]> producer, String topic, String... values) {
        producer.beginTransaction();
        for (String value : values) {
            producer.send(new ProducerRecord<>(topic, 0, null, value.getBytes(StandardCharsets.UTF_8)));
        }
    }

    private static Properties consumerProps(String bootstrap, String isolation) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return props;
    }

    private static List<String> read(String bootstrap, TopicPartition partition, String isolation, int expected) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(bootstrap, isolation))) {
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long deadline = System.currentTimeMillis() + 20_000;
            while (values.size() < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
        }
        return values;
    }

    private static String json(List<String> values) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < values.size(); i++) {
            out.append(i == 0 ? "" : ",").append('"').append(values.get(i)).append('"');
        }
        return out.append(']').toString();
    }
}
