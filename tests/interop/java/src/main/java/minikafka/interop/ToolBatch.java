package minikafka.interop;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.utils.Exit;

/**
 * Runs one of Kafka's command-line tools (its main class) many times in one JVM, so a test that needs dozens of
 * `kafka-configs` runs pays for one JVM start instead of dozens.
 *
 * Usage: ToolBatch MAIN_CLASS, with Kafka's lib dir on the class path. Reads one run per stdin line, its arguments
 * separated by tabs; for each writes "#STATUS OUT_BYTES ERR_BYTES\n" and then the run's stdout and stderr bytes to
 * stdout. Each run sees what a process of its own would: its own System.out/err, and Kafka's Exit.exit ends it at
 * once with that status (anything it prints after that call, as a process that had exited, is dropped). A run
 * that returns normally has status 0. Log4j's console output stays on the real stderr.
 */
public final class ToolBatch {
    private ToolBatch() {
    }

    /** Thrown by Kafka's Exit.exit/halt inside a run: unwinds the tool's main to us. */
    private static final class ExitCalled extends Error {
        private static final long serialVersionUID = 1L;
    }

    private static final PrintStream DISCARD = new PrintStream(OutputStream.nullOutputStream());
    private static volatile Integer exitStatus;

    public static void main(String[] args) throws Exception {
        Method toolMain = Class.forName(args[0]).getMethod("main", String[].class);
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        Exit.Procedure exit = (status, message) -> {
            if (exitStatus == null) {
                exitStatus = status;
                System.setOut(DISCARD);
                System.setErr(DISCARD);
            }
            throw new ExitCalled();
        };
        Exit.setExitProcedure(exit);
        Exit.setHaltProcedure(exit);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] toolArgs = line.isEmpty() ? new String[0] : line.split("\t", -1);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream runOut = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream runErr = new PrintStream(err, true, StandardCharsets.UTF_8);
            exitStatus = null;
            System.setOut(runOut);
            System.setErr(runErr);
            try {
                toolMain.invoke(null, (Object) toolArgs);
            } catch (InvocationTargetException e) {
                if (!(e.getCause() instanceof ExitCalled) && exitStatus == null) {
                    e.getCause().printStackTrace(runErr);  // as the JVM reports an uncaught exception
                    exitStatus = 1;
                }
            } finally {
                System.setOut(realOut);
                System.setErr(realErr);
            }
            runOut.flush();
            runErr.flush();
            int status = exitStatus == null ? 0 : exitStatus;
            byte[] outBytes = out.toByteArray();
            byte[] errBytes = err.toByteArray();
            realOut.print("#" + status + " " + outBytes.length + " " + errBytes.length + "\n");
            realOut.write(outBytes);
            realOut.write(errBytes);
            realOut.flush();
        }
    }
}
