// Serializes __share_group_state records with Apache Kafka's own share coordinator serde: reads lines of
// {"type": "snapshot"|"update"|"tombstone", "key": {...}, "value": {...}} on stdin (in the layout of Kafka's
// generated Share*JsonConverter classes), writes "<key hex> <value hex or ->" per line. Run by
// tests/broker/share/state_vectors/regenerate.py with kafka-share-coordinator 4.3.1 and its dependencies.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HexFormat;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotKeyJsonConverter;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotValueJsonConverter;
import org.apache.kafka.coordinator.share.generated.ShareUpdateKeyJsonConverter;
import org.apache.kafka.coordinator.share.generated.ShareUpdateValueJsonConverter;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class ShareStateRecordVectors {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        ShareCoordinatorRecordSerde serde = new ShareCoordinatorRecordSerde();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode node = mapper.readTree(line);
            String type = node.get("type").asText();
            CoordinatorRecord record;
            if (type.equals("update")) {
                record = CoordinatorRecord.record(
                    ShareUpdateKeyJsonConverter.read(node.get("key"), (short) 0),
                    new ApiMessageAndVersion(ShareUpdateValueJsonConverter.read(node.get("value"), (short) 0), (short) 0));
            } else if (type.equals("snapshot")) {
                record = CoordinatorRecord.record(
                    ShareSnapshotKeyJsonConverter.read(node.get("key"), (short) 0),
                    new ApiMessageAndVersion(ShareSnapshotValueJsonConverter.read(node.get("value"), (short) 0), (short) 0));
            } else {
                record = CoordinatorRecord.tombstone(ShareSnapshotKeyJsonConverter.read(node.get("key"), (short) 0));
            }
            byte[] value = serde.serializeValue(record);
            System.out.println(HexFormat.of().formatHex(serde.serializeKey(record)) + " "
                + (value == null ? "-" : HexFormat.of().formatHex(value)));
        }
    }
}
