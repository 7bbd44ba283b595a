package org.flinkagents.examples;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.flinkagents.bridge.JavaChatModel;
import org.flinkagents.bridge.Json;

/**
 * A Java chat model that answers from a script in its configuration; for tests and examples.
 *
 * <p>Configuration:
 *
 * <ul>
 *   <li>{@code script}: a list of replies. The reply used is chosen by the <em>turn</em>: the
 *       number of assistant messages after the last user message (so the first call of a
 *       conversation gets reply 0, the call after the first tool round gets reply 1, ...), which
 *       keeps conversations of different keys independent. Past the end, the last reply repeats.
 *       A reply is a string (the answer) or a message object {@code {"content": str,
 *       "tool_calls": [{"function": {"name": str, "arguments": {...}}}]}}.
 *   <li>{@code fail_when}: if the last user message contains this text, {@code chat} throws an
 *       {@code IllegalStateException("scripted failure: ...")}.
 * </ul>
 *
 * <p>String values in a reply may use placeholders: {@code {input}} (the last user message),
 * {@code {tool_results}} (the tool messages of this turn, joined by ", "), {@code
 * {tool_result:N}} (the N-th of them), {@code {tools}} (names of the offered tools) and {@code
 * {option:KEY}} (a per-call option such as the model name).
 */
public class ScriptedJavaChatModel extends ExampleResource implements JavaChatModel {

    private final AtomicLong calls = new AtomicLong();

    @Override
    @SuppressWarnings("unchecked")
    public String chat(String messagesJson, String toolsJson, String optionsJson) {
        List<Object> messages = Json.parseArray(messagesJson);
        List<Object> tools = Json.parseArray(toolsJson);
        Map<String, Object> options = Json.parseObject(optionsJson);
        calls.incrementAndGet();

        int lastUser = -1;
        for (int i = 0; i < messages.size(); i++) {
            if ("user".equals(role(messages.get(i)))) {
                lastUser = i;
            }
        }
        String input = lastUser < 0 ? "" : content(messages.get(lastUser));
        Object failWhen = config.get("fail_when");
        if (failWhen != null && input.contains(String.valueOf(failWhen))) {
            throw new IllegalStateException("scripted failure: input '" + input + "'");
        }
        int turn = 0;
        int lastAssistant = -1;
        for (int i = lastUser + 1; i < messages.size(); i++) {
            if ("assistant".equals(role(messages.get(i)))) {
                turn++;
                lastAssistant = i;
            }
        }
        List<String> toolResults = new ArrayList<>();
        if (lastAssistant >= 0) {
            for (int i = lastAssistant + 1; i < messages.size(); i++) {
                if ("tool".equals(role(messages.get(i)))) {
                    toolResults.add(content(messages.get(i)));
                }
            }
        }
        List<String> toolNames = new ArrayList<>();
        for (Object tool : tools) {
            Object function = ((Map<String, Object>) tool).get("function");
            if (function instanceof Map) {
                toolNames.add(String.valueOf(((Map<String, Object>) function).get("name")));
            }
        }

        List<Object> script = scriptOrEmpty();
        if (script.isEmpty()) {
            throw new IllegalStateException("ScriptedJavaChatModel has an empty 'script'");
        }
        Object reply = script.get(Math.min(turn, script.size() - 1));
        Map<String, Object> message = new LinkedHashMap<>();
        message.put("role", "assistant");
        if (reply instanceof Map) {
            message.putAll((Map<String, Object>) reply);
            message.put("role", "assistant");
        } else {
            message.put("content", String.valueOf(reply));
        }
        Object filled = fill(message, input, toolResults, toolNames, options);
        Map<String, Object> out = (Map<String, Object>) filled;
        Object toolCalls = out.get("tool_calls");
        if (toolCalls instanceof List) {
            int i = 0;
            for (Object call : (List<Object>) toolCalls) {
                Map<String, Object> c = (Map<String, Object>) call;
                c.putIfAbsent("id", "call_" + turn + "_" + i++);
                c.putIfAbsent("type", "function");
            }
        }
        Map<String, Object> extra = new LinkedHashMap<>();
        if (out.get("extra_args") instanceof Map) {
            extra.putAll((Map<String, Object>) out.get("extra_args"));
        }
        extra.put("java_model", getClass().getName());
        extra.put("turn", (long) turn);
        out.put("extra_args", extra);
        return Json.write(out);
    }

    /** Number of chat calls this instance answered. */
    public long calls() {
        return calls.get();
    }

    @SuppressWarnings("unchecked")
    private List<Object> scriptOrEmpty() {
        Object script = config.get("script");
        if (script == null) {
            return new ArrayList<>();
        }
        if (!(script instanceof List)) {
            throw new IllegalArgumentException("'script' must be a list of replies");
        }
        return (List<Object>) script;
    }

    @SuppressWarnings("unchecked")
    private static Object fill(
            Object value,
            String input,
            List<String> toolResults,
            List<String> toolNames,
            Map<String, Object> options) {
        if (value instanceof String) {
            String s = (String) value;
            s = s.replace("{input}", input);
            s = s.replace("{tool_results}", String.join(", ", toolResults));
            s = s.replace("{tools}", String.join(",", toolNames));
            for (int i = 0; i < toolResults.size(); i++) {
                s = s.replace("{tool_result:" + i + "}", toolResults.get(i));
            }
            for (Map.Entry<String, Object> e : options.entrySet()) {
                s = s.replace("{option:" + e.getKey() + "}", String.valueOf(e.getValue()));
            }
            return s;
        }
        if (value instanceof Map) {
            Map<String, Object> copy = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : ((Map<String, Object>) value).entrySet()) {
                copy.put(e.getKey(), fill(e.getValue(), input, toolResults, toolNames, options));
            }
            return copy;
        }
        if (value instanceof List) {
            List<Object> copy = new ArrayList<>();
            for (Object item : (List<Object>) value) {
                copy.add(fill(item, input, toolResults, toolNames, options));
            }
            return copy;
        }
        return value;
    }

    private static String role(Object message) {
        return message instanceof Map ? String.valueOf(((Map<?, ?>) message).get("role")) : "";
    }

    private static String content(Object message) {
        Object c = message instanceof Map ? ((Map<?, ?>) message).get("content") : null;
        return c == null ? "" : String.valueOf(c);
    }
}
