package minikafka.interop;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Interop scenario for the Java client: produce N keyed records with headers (default idempotent producer,
 * acks=all, lz4), consume them back, print one JSON summary line. The kafkajs script prints the same schema.
 *
 * Record i: key "key-i", value "value-i" + i%7 copies of "-pad", headers idx=i and src=interop.
 * Digest: sha256 over the sorted lines "hex(key) hex(value) name=hex(value),..." of the records.
 *
 * Modes: produce, consume, produce-consume (above; a group consume also prints "first_offset" per partition
 * and commits what it read), consume-commit (see consumeCommit: process --count records in --group,
 * commitSync them, exit) and group-member (GroupMemberClient: a long-running member of --group, by default
 * with group.protocol=consumer, driven by commands on stdin).
 *
 * Optional --producer-config and --consumer-config "k=v,k=v" add client properties (e.g. small batches and
 * fetch sizes, so that a consume takes many fetches).
 */
public final class InteropClient {
    private InteropClient() {}

    static final Map<String, String> PRODUCER_CONFIG = new HashMap<>();
    static final Map<String, String> CONSUMER_CONFIG = new HashMap<>();

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parseArgs(argv);
        if ("group-member".equals(args.get("mode"))) {
            GroupMemberClient.main(argv);
            return;
        }
        String bootstrap = args.get("bootstrap");
        String topic = args.get("topic");
        int count = Integer.parseInt(args.getOrDefault("count", "100"));
        int partitions = Integer.parseInt(args.getOrDefault("partitions", "3"));
        String mode = args.getOrDefault("mode", "produce-consume");
        String group = args.get("group");
        long timeoutMs = Long.parseLong(args.getOrDefault("timeout-ms", "30000"));
        PRODUCER_CONFIG.putAll(parseConfig(args.getOrDefault("producer-config", "")));
        CONSUMER_CONFIG.putAll(parseConfig(args.getOrDefault("consumer-config", "")));

        StringBuilder json = new StringBuilder("{\"client\":\"java\",\"topic\":").append(quote(topic));
        if (mode.equals("consume-commit")) {
            int maxPerPartition = Integer.parseInt(args.getOrDefault("max-per-partition", "2147483647"));
            consumeCommit(bootstrap, topic, count, maxPerPartition, group, timeoutMs, json);
        } else {
            if (mode.contains("produce")) {
                createTopic(bootstrap, topic, partitions);
                produce(bootstrap, topic, count, json);
            }
            if (mode.contains("consume")) {
                consume(bootstrap, topic, count, group, timeoutMs, json);
            }
        }
        json.append('}');
        System.out.println(json);
    }

    static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        // the admin connects like the producer: same security settings (SSL/SASL listeners)
        PRODUCER_CONFIG.forEach((key, value) -> {
            if (key.startsWith("security.") || key.startsWith("ssl.") || key.startsWith("sasl.")) {
                props.put(key, value);
            }
        });
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
    }

    static void produce(String bootstrap, String topic, int count, StringBuilder json) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.putAll(PRODUCER_CONFIG);
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        List<String> lines = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                byte[] key = ("key-" + i).getBytes(StandardCharsets.UTF_8);
                byte[] value = ("value-" + i + "-pad".repeat(i % 7)).getBytes(StandardCharsets.UTF_8);
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, key, value);
                record.headers().add("idx", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                record.headers().add("src", "interop".getBytes(StandardCharsets.UTF_8));
                lines.add(line(key, value, record.headers()));
                futures.add(producer.send(record));
            }
            producer.flush();
        }
        Map<Integer, long[]> byPartition = new TreeMap<>();  // partition -> {count, first, last}
        for (Future<RecordMetadata> future : futures) {
            RecordMetadata meta = future.get();
            long[] stats = byPartition.computeIfAbsent(meta.partition(), p -> new long[] {0, Long.MAX_VALUE, -1});
            stats[0]++;
            stats[1] = Math.min(stats[1], meta.offset());
            stats[2] = Math.max(stats[2], meta.offset());
        }
        json.append(",\"produced\":").append(futures.size()).append(",\"produced_partitions\":{");
        boolean first = true;
        for (Map.Entry<Integer, long[]> e : byPartition.entrySet()) {
            json.append(first ? "" : ",").append(quote(e.getKey().toString())).append(":{\"count\":")
                .append(e.getValue()[0]).append(",\"first_offset\":").append(e.getValue()[1])
                .append(",\"last_offset\":").append(e.getValue()[2]).append('}');
            first = false;
        }
        json.append("},\"produced_digest\":").append(quote(digest(lines)));
    }

    static void consume(String bootstrap, String topic, int expected, String group, long timeoutMs,
                        StringBuilder json) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        props.putAll(CONSUMER_CONFIG);
        List<String> lines = new ArrayList<>();
        Map<Integer, Long> lastOffset = new TreeMap<>();
        Map<Integer, Long> firstOffset = new TreeMap<>();
        Map<Integer, Long> previous = new HashMap<>();
        int outOfOrder = 0;
        long deadline = System.currentTimeMillis() + timeoutMs;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            if (group != null) {
                consumer.subscribe(List.of(topic));
            } else {
                List<TopicPartition> assignment = new ArrayList<>();
                for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofMillis(timeoutMs))) {
                    assignment.add(new TopicPartition(topic, info.partition()));
                }
                consumer.assign(assignment);
                consumer.seekToBeginning(assignment);
            }
            while (lines.size() < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    Long before = previous.put(record.partition(), record.offset());
                    if (before != null && record.offset() <= before) {
                        outOfOrder++;
                    }
                    lastOffset.put(record.partition(), record.offset());
                    firstOffset.putIfAbsent(record.partition(), record.offset());
                    lines.add(line(record.key(), record.value(), record.headers()));
                }
            }
            if (group != null) {
                consumer.commitSync();
            }
        }
        json.append(",\"consumed\":").append(lines.size()).append(",\"last_offset\":{");
        boolean first = true;
        for (Map.Entry<Integer, Long> e : lastOffset.entrySet()) {
            json.append(first ? "" : ",").append(quote(e.getKey().toString())).append(':').append(e.getValue());
            first = false;
        }
        json.append('}');
        if (group != null) {  // only group reads print it: group-less summaries are compared with kafkajs's
            json.append(",\"first_offset\":").append(offsetsJson(firstOffset));
        }
        json.append(",\"out_of_order\":").append(outOfOrder).append(",\"digest\":").append(quote(digest(lines)));
    }

    /**
     * Mode consume-commit: subscribe in `group`, process exactly `count` records (further records a poll
     * returned are not processed) and at most `maxPerPartition` of each partition (a partition that reached
     * it is paused), commitSync the next offset of each partition processed, read the
     * committed offsets back with committed() and exit (LeaveGroup on close). Prints "consumed",
     * "first_offset", "committed" (what was committed) and "committed_read_back" (what the coordinator returned).
     */
    static void consumeCommit(String bootstrap, String topic, int count, int maxPerPartition, String group,
                              long timeoutMs, StringBuilder json) throws Exception {
        if (group == null) {
            throw new IllegalArgumentException("--group is required for consume-commit");
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        Map<Integer, Long> firstOffset = new TreeMap<>();
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        Map<Integer, Integer> perPartition = new HashMap<>();
        int processed = 0;
        long deadline = System.currentTimeMillis() + timeoutMs;
        Map<TopicPartition, OffsetAndMetadata> readBack;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (processed < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    TopicPartition tp = new TopicPartition(topic, record.partition());
                    if (processed == count || perPartition.getOrDefault(record.partition(), 0) >= maxPerPartition) {
                        continue;
                    }
                    firstOffset.putIfAbsent(record.partition(), record.offset());
                    commit.put(tp, new OffsetAndMetadata(record.offset() + 1));
                    processed++;
                    if (perPartition.merge(record.partition(), 1, Integer::sum) >= maxPerPartition) {
                        consumer.pause(List.of(tp));
                    }
                }
            }
            consumer.commitSync(commit);
            readBack = consumer.committed(commit.keySet(), Duration.ofMillis(timeoutMs));
        }
        json.append(",\"consumed\":").append(processed);
        json.append(",\"first_offset\":").append(offsetsJson(firstOffset));
        Map<Integer, Long> committed = new TreeMap<>();
        commit.forEach((tp, om) -> committed.put(tp.partition(), om.offset()));
        json.append(",\"committed\":").append(offsetsJson(committed));
        Map<Integer, Long> back = new TreeMap<>();
        readBack.forEach((tp, om) -> back.put(tp.partition(), om == null ? -1L : om.offset()));
        json.append(",\"committed_read_back\":").append(offsetsJson(back));
    }

    static String offsetsJson(Map<Integer, Long> offsets) {
        StringBuilder sb = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<Integer, Long> e : offsets.entrySet()) {
            sb.append(first ? "" : ",").append(quote(e.getKey().toString())).append(':').append(e.getValue());
            first = false;
        }
        return sb.append('}').toString();
    }

    static String line(byte[] key, byte[] value, Iterable<Header> headers) {
        StringBuilder sb = new StringBuilder(hex(key)).append(' ').append(hex(value)).append(' ');
        boolean first = true;
        for (Header h : headers) {
            sb.append(first ? "" : ",").append(h.key()).append('=').append(hex(h.value()));
            first = false;
        }
        return sb.toString();
    }

    static String digest(List<String> lines) throws Exception {
        List<String> sorted = new ArrayList<>(lines);
        Collections.sort(sorted);
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        return hex(sha.digest(String.join("\n", sorted).getBytes(StandardCharsets.UTF_8)));
    }

    static String hex(byte[] bytes) {
        if (bytes == null) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static Map<String, String> parseConfig(String spec) {
        Map<String, String> config = new HashMap<>();
        for (String pair : spec.split(",")) {
            if (!pair.isEmpty()) {
                int eq = pair.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("expected key=value, got " + pair);
                }
                config.put(pair.substring(0, eq), pair.substring(eq + 1));
            }
        }
        return config;
    }

    static Map<String, String> parseArgs(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name value, got " + argv[i]);
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        for (String required : List.of("bootstrap", "topic")) {
            if (!args.containsKey(required)) {
                throw new IllegalArgumentException("--" + required + " is required");
            }
        }
        return args;
    }
}
