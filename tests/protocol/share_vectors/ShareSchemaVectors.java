// Encodes messages with Apache Kafka's own generated classes: reads lines of {"message", "version", "data"} on
// stdin (data in the layout of Kafka's generated <Message>DataJsonConverter), writes one line of hex per input.
// Run by tests/protocol/share_vectors/regenerate.py with kafka-clients 4.3.1 and jackson-databind on the classpath.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

public class ShareSchemaVectors {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode node = mapper.readTree(line);
            String message = node.get("message").asText();
            short version = (short) node.get("version").asInt();
            Class<?> converter = Class.forName("org.apache.kafka.common.message." + message + "DataJsonConverter");
            Method read = converter.getMethod("read", JsonNode.class, short.class);
            ApiMessage data = (ApiMessage) read.invoke(null, node.get("data"), version);
            ObjectSerializationCache cache = new ObjectSerializationCache();
            ByteBuffer buffer = ByteBuffer.allocate(data.size(cache, version));
            data.write(new ByteBufferAccessor(buffer), cache, version);
            System.out.println(HexFormat.of().formatHex(buffer.array()));
        }
    }
}
