package org.flinkagents.bridge;

/**
 * A tool a chat model can call, implemented in Java.
 *
 * <p>Contract across the boundary (all JSON strings):
 *
 * <ul>
 *   <li>{@link #argsSchemaJson()}: a JSON schema object of the arguments, e.g. {@code
 *       {"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}
 *   <li>{@link #call(String)}: receives the arguments as a JSON object and returns the result as
 *       a JSON value (a JSON string literal, number, object...). Python decodes it.
 * </ul>
 */
public interface JavaTool extends JavaResource {

    /** The name the model calls the tool by. */
    String name();

    /** What the tool does (shown to the model). */
    String description();

    /** JSON schema (an object) of the arguments. */
    String argsSchemaJson();

    /**
     * Runs the tool.
     *
     * @param argsJson the arguments as a JSON object
     * @return the result as a JSON value
     * @throws Exception on failure; the exception class and message reach Python
     */
    String call(String argsJson) throws Exception;
}
