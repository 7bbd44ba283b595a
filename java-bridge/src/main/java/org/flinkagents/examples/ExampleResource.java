package org.flinkagents.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.flinkagents.bridge.JavaResource;
import org.flinkagents.bridge.Json;

/**
 * Shared lifecycle of the example resources.
 *
 * <p>Configuration keys understood by every example:
 *
 * <ul>
 *   <li>{@code lifecycle_file}: a path; "open &lt;class&gt;" and "close &lt;class&gt;" lines are
 *       appended to it (tests use it to count instances across Flink's processes).
 *   <li>{@code fail_on_open}: a message; {@link #open} throws an {@code IllegalStateException}
 *       with it.
 * </ul>
 */
public abstract class ExampleResource implements JavaResource {

    /** Opens and closes per class name in this JVM. */
    public static final Map<String, AtomicInteger> OPENED = new ConcurrentHashMap<>();

    /** Closes per class name in this JVM. */
    public static final Map<String, AtomicInteger> CLOSED = new ConcurrentHashMap<>();

    /** The configuration given to {@link #open}. */
    protected Map<String, Object> config;

    @Override
    public void open(String configJson) throws Exception {
        config = Json.parseObject(configJson);
        Object fail = config.get("fail_on_open");
        if (fail != null) {
            throw new IllegalStateException(String.valueOf(fail));
        }
        OPENED.computeIfAbsent(getClass().getName(), k -> new AtomicInteger()).incrementAndGet();
        record("open");
    }

    @Override
    public void close() throws Exception {
        CLOSED.computeIfAbsent(getClass().getName(), k -> new AtomicInteger()).incrementAndGet();
        record("close");
    }

    /**
     * A string configuration value.
     *
     * @param key the key
     * @param fallback the value when the key is absent
     * @return the value
     */
    protected String configString(String key, String fallback) {
        Object value = config == null ? null : config.get(key);
        return value == null ? fallback : String.valueOf(value);
    }

    private void record(String what) throws IOException {
        Object file = config == null ? null : config.get("lifecycle_file");
        if (file == null) {
            return;
        }
        String line = what + " " + getClass().getName() + "\n";
        synchronized (ExampleResource.class) {
            Files.write(
                    Paths.get(String.valueOf(file)),
                    line.getBytes(StandardCharsets.UTF_8),
                    StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        }
    }
}
