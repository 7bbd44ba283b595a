package org.flinkagents.bridge;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A created Java resource as the Python side sees it.
 *
 * <p>Every method returns an envelope string: {@code "0"} followed by the JSON result on
 * success, {@code "1"} followed by the rendered exception (see {@link Bridge#describe}) on
 * failure. The envelope keeps exceptions from crossing pemja (where they lose their type) and
 * costs one character.
 */
public final class Handle {

    private final JavaResource resource;
    private final String kind;
    private volatile boolean closed;

    Handle(JavaResource resource, String kind) {
        this.resource = resource;
        this.kind = kind;
    }

    /** The resource kind: "tool", "chat_model" or "embedding_model". */
    public String kind() {
        return kind;
    }

    /** The resource's class name. */
    public String className() {
        return resource.getClass().getName();
    }

    /** For a tool: {@code {"name":..., "description":..., "args_schema": {...}}}. */
    public String metadata() {
        try {
            JavaTool tool = (JavaTool) resource;
            Map<String, Object> meta = new LinkedHashMap<>();
            meta.put("name", tool.name());
            meta.put("description", tool.description());
            String schema = tool.argsSchemaJson();
            meta.put(
                    "args_schema",
                    schema == null || schema.trim().isEmpty()
                            ? Json.parse("{\"type\":\"object\",\"properties\":{}}")
                            : Json.parseObject(schema));
            return "0" + Json.write(meta);
        } catch (Throwable t) {
            return "1" + Bridge.describe(t);
        }
    }

    /** For a tool: runs it with the arguments (a JSON object). */
    public String call(String argsJson) {
        try {
            ensureOpen();
            return "0" + ((JavaTool) resource).call(argsJson);
        } catch (Throwable t) {
            return "1" + Bridge.describe(t);
        }
    }

    /** For a chat model: one model call (see {@link JavaChatModel}). */
    public String chat(String messagesJson, String toolsJson, String optionsJson) {
        try {
            ensureOpen();
            return "0" + ((JavaChatModel) resource).chat(messagesJson, toolsJson, optionsJson);
        } catch (Throwable t) {
            return "1" + Bridge.describe(t);
        }
    }

    /** For an embedding model: vectors for a JSON array of texts. */
    public String embed(String textsJson, String optionsJson) {
        try {
            ensureOpen();
            return "0" + ((JavaEmbeddingModel) resource).embed(textsJson, optionsJson);
        } catch (Throwable t) {
            return "1" + Bridge.describe(t);
        }
    }

    /** Closes the resource once; later calls fail. */
    public String close() {
        synchronized (this) {
            if (closed) {
                return "0null";
            }
            closed = true;
        }
        try {
            resource.close();
            return "0null";
        } catch (Throwable t) {
            return "1" + Bridge.describe(t);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(className() + " is closed");
        }
    }
}
