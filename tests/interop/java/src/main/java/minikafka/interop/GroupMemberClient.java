package minikafka.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A long-running group member for the group-protocol scenarios: one KafkaConsumer (group.protocol=consumer
 * by default, or classic) subscribed to --topic in --group, polled until it is told to exit.
 *
 * Prints one JSON object per line on stdout:
 *   {"event":"assignment","partitions":[..],"member_id":..,"generation":..} whenever the assignment changes,
 *   {"event":"assigned"|"revoked"|"lost","partitions":[..]} from the rebalance listener,
 *   {"event":"records","partition":p,"first_offset":a,"last_offset":b,"count":n} per partition and poll,
 *   {"event":"committed","offsets":{p:o}} after a commit, {"event":"committed_read","offsets":{p:o}} for
 *   "committed" (-1: none), {"event":"error","command":..,"error":..,"message":..} when a command fails,
 *   {"event":"closed"} last.
 *
 * Commands on stdin, one a line, applied between polls (the consumer is single-threaded):
 *   "commit 0=3,1=4" commitSync those offsets of --topic; "committed" reads the committed offsets of every
 *   partition of --topic; "exit" closes the consumer (leaving the group) and exits 0; so does stdin's end.
 * Killing the JVM (SIGKILL) leaves the group to the coordinator's session timeout.
 *
 * Options: --bootstrap, --topic, --group (required); --protocol consumer|classic; --client-id;
 * --instance-id (static membership); --consumer-config "k=v,k=v".
 */
public final class GroupMemberClient {
    private GroupMemberClient() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = InteropClient.parseArgs(argv);
        String topic = args.get("topic");
        String group = args.get("group");
        if (group == null) {
            throw new IllegalArgumentException("--group is required");
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, args.getOrDefault("protocol", "consumer"));
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (args.containsKey("client-id")) {
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, args.get("client-id"));
        }
        if (args.containsKey("instance-id")) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, args.get("instance-id"));
        }
        props.putAll(InteropClient.parseConfig(args.getOrDefault("consumer-config", "")));

        LinkedBlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> readCommands(commands), "stdin-commands");
        reader.setDaemon(true);
        reader.start();

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic), new Listener());
            Set<Integer> shown = null;
            while (true) {
                String command = commands.poll();
                if (command != null) {
                    if (command.equals("exit")) {
                        break;
                    }
                    run(consumer, topic, command);
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                printRecords(records);
                Set<Integer> now = partitions(consumer.assignment());
                if (!now.equals(shown)) {
                    ConsumerGroupMetadata meta = consumer.groupMetadata();
                    emit("{\"event\":\"assignment\",\"partitions\":" + now + ",\"member_id\":"
                        + InteropClient.quote(meta.memberId()) + ",\"generation\":" + meta.generationId() + "}");
                    shown = now;
                }
            }
        }
        emit("{\"event\":\"closed\"}");
    }

    static void readCommands(LinkedBlockingQueue<String> commands) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.isBlank()) {
                    commands.add(line.strip());
                }
            }
        } catch (Exception e) {
            // stdin closed under us: treated as its end
        }
        commands.add("exit");
    }

    static void run(KafkaConsumer<byte[], byte[]> consumer, String topic, String command) {
        try {
            if (command.startsWith("commit ")) {
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                InteropClient.parseConfig(command.substring("commit ".length()).replace(' ', ',')).forEach(
                    (partition, offset) -> offsets.put(new TopicPartition(topic, Integer.parseInt(partition)),
                                                       new OffsetAndMetadata(Long.parseLong(offset))));
                consumer.commitSync(offsets, Duration.ofSeconds(30));
                Map<Integer, Long> done = new TreeMap<>();
                offsets.forEach((tp, om) -> done.put(tp.partition(), om.offset()));
                emit("{\"event\":\"committed\",\"offsets\":" + InteropClient.offsetsJson(done) + "}");
            } else if (command.equals("committed")) {
                Set<TopicPartition> all = new HashSet<>();
                for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
                    all.add(new TopicPartition(topic, info.partition()));
                }
                Map<Integer, Long> read = new TreeMap<>();
                consumer.committed(all, Duration.ofSeconds(30)).forEach(
                    (tp, om) -> read.put(tp.partition(), om == null ? -1L : om.offset()));
                emit("{\"event\":\"committed_read\",\"offsets\":" + InteropClient.offsetsJson(read) + "}");
            } else {
                throw new IllegalArgumentException("unknown command: " + command);
            }
        } catch (Exception e) {
            emit("{\"event\":\"error\",\"command\":" + InteropClient.quote(command) + ",\"error\":"
                + InteropClient.quote(e.getClass().getSimpleName()) + ",\"message\":"
                + InteropClient.quote(String.valueOf(e.getMessage())) + "}");
        }
    }

    static void printRecords(ConsumerRecords<byte[], byte[]> records) {
        for (TopicPartition tp : records.partitions()) {
            List<ConsumerRecord<byte[], byte[]>> batch = records.records(tp);
            emit("{\"event\":\"records\",\"partition\":" + tp.partition() + ",\"first_offset\":"
                + batch.get(0).offset() + ",\"last_offset\":" + batch.get(batch.size() - 1).offset()
                + ",\"count\":" + batch.size() + "}");
        }
    }

    static Set<Integer> partitions(Collection<TopicPartition> tps) {
        Set<Integer> out = new TreeSet<>();
        for (TopicPartition tp : tps) {
            out.add(tp.partition());
        }
        return out;
    }

    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Prints the rebalance callbacks (they run inside poll, on the polling thread). */
    static final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            emit("{\"event\":\"revoked\",\"partitions\":" + new ArrayList<>(partitions(partitions)) + "}");
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            emit("{\"event\":\"assigned\",\"partitions\":" + new ArrayList<>(partitions(partitions)) + "}");
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            emit("{\"event\":\"lost\",\"partitions\":" + new ArrayList<>(partitions(partitions)) + "}");
        }
    }
}
