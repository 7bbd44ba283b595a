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

    /** The resource kind: "tool", "chat_model", "embedding_model" or "vector_store". */
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

    /**
     * For a vector store: one operation (see {@link JavaVectorStore}). {@code operation} is
     * {@code add}, {@code query}, {@code get}, {@code delete}, {@code update}, {@code
     * listCollections}, {@code createCollection} or {@code deleteCollection}; {@code argsJson} a
     * JSON array of its arguments in the interface's order (documents, vectors, ids and filters
     * as JSON text, {@code null} allowed).
     */
    public String vectorStore(String operation, String argsJson) {
        try {
            ensureOpen();
            JavaVectorStore store = (JavaVectorStore) resource;
            java.util.List<Object> args = Json.parseArray(argsJson);
            switch (operation) {
                case "add":
                    return "0" + store.add(text(args, 0), text(args, 1));
                case "query":
                    return "0"
                            + store.query(
                                    text(args, 0),
                                    ((Number) args.get(1)).intValue(),
                                    text(args, 2),
                                    text(args, 3));
                case "get":
                    return "0"
                            + store.get(
                                    text(args, 0),
                                    text(args, 1),
                                    text(args, 2),
                                    ((Number) args.get(3)).intValue());
                case "delete":
                    store.delete(text(args, 0), text(args, 1), text(args, 2));
                    return "0null";
                case "update":
                    store.update(text(args, 0), text(args, 1));
                    return "0null";
                case "listCollections":
                    return "0" + store.listCollections();
                case "createCollection":
                    store.createCollection(text(args, 0));
                    return "0null";
                case "deleteCollection":
                    store.deleteCollection(text(args, 0));
                    return "0null";
                default:
                    throw new IllegalArgumentException("unknown vector store operation " + operation);
            }
        } catch (Throwable t) {
            return "1" + Bridge.describe(t);
        }
    }

    private static String text(java.util.List<Object> args, int index) {
        Object value = args.get(index);
        return value == null ? null : String.valueOf(value);
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
