// Serializes coordinator records with Apache Kafka's own serdes: reads lines of
// {"package": "group"|"share", "name": "<record name>", "key": {...}, "value": {...}} on stdin (in the layout of
// Kafka's generated <Name>Key/ValueJsonConverter) and writes "<key hex> <value hex>" per line, through
// GroupCoordinatorRecordSerde or ShareCoordinatorRecordSerde. Run by cases.py in this folder.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HexFormat;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class CoordinatorRecordVectors {
    static ApiMessage read(String pkg, String cls, JsonNode node) throws Exception {
        Class<?> converter = Class.forName("org.apache.kafka.coordinator." + pkg + ".generated." + cls + "JsonConverter");
        return (ApiMessage) converter.getMethod("read", JsonNode.class, short.class).invoke(null, node, (short) 0);
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode node = mapper.readTree(line);
            String pkg = node.get("package").asText();
            String name = node.get("name").asText();
            CoordinatorRecordSerde serde = pkg.equals("group") ? new GroupCoordinatorRecordSerde() : new ShareCoordinatorRecordSerde();
            CoordinatorRecord record = CoordinatorRecord.record(
                read(pkg, name + "Key", node.get("key")),
                new ApiMessageAndVersion(read(pkg, name + "Value", node.get("value")), (short) 0));
            System.out.println(HexFormat.of().formatHex(serde.serializeKey(record)) + " "
                + HexFormat.of().formatHex(serde.serializeValue(record)));
        }
    }
}
