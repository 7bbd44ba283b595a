package org.flinkagents.bridge;

/**
 * Lifecycle shared by every Java resource a Python agent can use.
 *
 * <p>An implementation needs a public no-argument constructor. The bridge creates one instance
 * per task slot, calls {@link #open(String)} once with the resource's configuration (the
 * descriptor's arguments as a JSON object), and {@link #close()} once when the operator closes.
 * Calls may come from several threads; implementations must be thread safe.
 */
public interface JavaResource extends AutoCloseable {

    /**
     * Configures the resource.
     *
     * @param configJson the descriptor arguments as a JSON object (never null, maybe "{}")
     * @throws Exception if the resource cannot be set up; the message reaches Python
     */
    default void open(String configJson) throws Exception {}

    /** Releases what the resource holds. Called once. */
    @Override
    default void close() throws Exception {}
}
