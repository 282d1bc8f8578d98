package minikafka.interop;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A KIP-320 consumer meeting an unclean election, for the side-by-side unclean-election test: partition 0 of
 * TOPIC assigned from offset 0 with auto.offset.reset=none, so a position past the new leader's log end is reported
 * (LogTruncationException) instead of reset.
 *
 * Usage: LogTruncationClient BOOTSTRAP TOPIC COUNT
 *
 * Polls until it has read COUNT records and prints {"read":COUNT}; then polls (120 s at most) until the consumer
 * detects the truncation and prints {"divergent_offset":O,"divergent_epoch":E} (the divergent offset and its
 * leader epoch the exception names), or {"error":"..."} for anything else.
 */
public final class LogTruncationClient {
    private LogTruncationClient() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        TopicPartition partition = new TopicPartition(args[1], 0);
        int count = Integer.parseInt(args[2]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("auto.offset.reset", "none");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(List.of(partition));
            consumer.seek(partition, 0);
            int read = 0;
            long deadline = System.currentTimeMillis() + 120_000;
            while (read < count) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("read " + read + " of " + count + " records");
                }
                for (ConsumerRecord<String, String> ignored : consumer.poll(Duration.ofMillis(200))) {
                    read++;
                }
            }
            System.out.println("{\"read\":" + read + "}");
            System.out.flush();
            while (System.currentTimeMillis() < deadline) {
                try {
                    if (!consumer.poll(Duration.ofMillis(200)).isEmpty()) {
                        System.out.println("{\"error\":\"records past offset " + read + "\"}");
                        return;
                    }
                } catch (LogTruncationException truncation) {
                    Map<TopicPartition, OffsetAndMetadata> divergent = truncation.divergentOffsets();
                    OffsetAndMetadata at = divergent.get(partition);
                    System.out.println("{\"divergent_offset\":" + at.offset() + ",\"divergent_epoch\":"
                        + at.leaderEpoch().orElse(-1) + "}");
                    return;
                }
            }
            System.out.println("{\"error\":\"no truncation detected\"}");
        }
    }
}
