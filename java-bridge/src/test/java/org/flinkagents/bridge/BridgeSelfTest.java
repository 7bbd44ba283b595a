package org.flinkagents.bridge;

import java.util.List;
import java.util.Map;

/**
 * Unit tests of the Java side, run by {@code build.sh} with plain {@code java} (no JUnit here).
 * Exits with status 1 on the first failure.
 */
public final class BridgeSelfTest {

    private static int checks;

    private BridgeSelfTest() {}

    public static void main(String[] args) throws Exception {
        json();
        bridgeErrors();
        tools();
        scalarFunctionTool();
        chatModel();
        embedding();
        System.out.println("java-bridge self test: " + checks + " checks passed");
    }

    private static void json() {
        String doc =
                "{\"a\": [1, 2.5, -3e2, true, false, null], \"s\": \"q\\\"\\\\\\n\\u00e9\","
                        + " \"o\": {}, \"l\": []}";
        Map<String, Object> m = Json.parseObject(doc);
        List<?> a = (List<?>) m.get("a");
        eq(1L, a.get(0), "integer");
        eq(2.5, a.get(1), "double");
        eq(-300.0, a.get(2), "exponent");
        eq(Boolean.TRUE, a.get(3), "true");
        eq(null, a.get(5), "null");
        eq("q\"\\\n\u00e9", m.get("s"), "escapes");
        eq(m, Json.parse(Json.write(m)), "round trip");
        eq("\"a\\u0001\"", Json.quote("a\u0001"), "control char");
        eq("2.0", Json.write(2.0), "whole double keeps a fraction");
        fails(() -> Json.parse("{\"a\": }"), "invalid JSON at offset");
        fails(() -> Json.parse("[1] x"), "trailing");
        fails(() -> Json.parseObject("[1]"), "expected a JSON object");
    }

    private static void bridgeErrors() {
        Bridge bridge = new Bridge();
        eq("1", bridge.version(), "version");
        eq("", bridge.check("org.flinkagents.examples.UpperCaseTool", "tool"), "check ok");
        contains(bridge.check("com.acme.Missing", "tool"), "class not found: com.acme.Missing");
        contains(
                bridge.check("org.flinkagents.examples.UpperCaseTool", "chat_model"),
                "does not implement org.flinkagents.bridge.JavaChatModel");
        contains(bridge.check("java.lang.String", "tool"), "does not implement");
        contains(bridge.check("org.flinkagents.examples.UpperCaseTool", "x"), "unknown Java");
        Object failed =
                bridge.create(
                        "org.flinkagents.examples.UpperCaseTool", "tool", "{\"fail_on_open\":\"no\"}");
        contains((String) failed, "open() failed: java.lang.IllegalStateException: no");
    }

    private static void tools() {
        Handle upper = (Handle) new Bridge().create("org.flinkagents.examples.UpperCaseTool", "tool", "{}");
        contains(upper.metadata(), "0{\"name\":\"upper_case\"");
        eq("0\"HÉLLO\"", upper.call("{\"text\":\"héllo\"}"), "upper");
        contains(upper.call("{\"text\": 1}"), "1java.lang.IllegalArgumentException: argument 'text'");
        eq("0null", upper.close(), "close");
        contains(upper.call("{\"text\":\"x\"}"), "is closed");

        Handle calc = (Handle) new Bridge().create("org.flinkagents.examples.CalculatorTool", "tool", null);
        eq("07", calc.call("{\"a\":3,\"b\":4,\"op\":\"add\"}"), "add");
        eq("00.5", calc.call("{\"a\":1,\"b\":2,\"op\":\"div\"}"), "div");
        contains(
                calc.call("{\"a\":1,\"b\":0,\"op\":\"div\"}"),
                "1java.lang.ArithmeticException: division by zero\n\tat org.flinkagents.examples.CalculatorTool");
    }

    private static void scalarFunctionTool() throws ClassNotFoundException {
        try {
            Class.forName("org.apache.flink.table.functions.ScalarFunction");
        } catch (ClassNotFoundException e) {
            System.out.println("scalar function tool: skipped (no Flink table jar on the class path)");
            return;
        }
        Handle celsius =
                (Handle)
                        new Bridge()
                                .create(
                                        "org.flinkagents.bridge.ScalarFunctionTool",
                                        "tool",
                                        "{\"function_class\":\"org.flinkagents.examples.ConvertToCelsius\","
                                                + "\"tool_name\":\"to_celsius\"}");
        contains(celsius.metadata(), "0{\"name\":\"to_celsius\"");
        contains(
                celsius.metadata(),
                "\"properties\":{\"fahrenheit\":{\"type\":\"number\"}},\"required\":[\"fahrenheit\"]");
        eq("0100.0", celsius.call("{\"fahrenheit\":212}"), "integer argument to Double");
        eq("020.0", celsius.call("{\"fahrenheit\":68.0}"), "double argument");
        contains(celsius.call("{\"fahrenheit\":\"hot\"}"), "argument 'fahrenheit' must be number");
        contains(celsius.call("{}"), "missing argument 'fahrenheit'");
        contains(celsius.call("{\"fahrenheit\":1,\"x\":2}"), "unknown argument 'x'");
        eq("0null", celsius.close(), "close");
        fails(
                () -> ScalarFunctionTool.describe(String.class, "t", "", "f"),
                "is not a Flink ScalarFunction");
        contains(
                ScalarFunctionTool.describe(
                        Class.forName("org.flinkagents.examples.ConvertToCelsius"), "t", "", "c2c"),
                "Calls the Flink function c2c (org.flinkagents.examples.ConvertToCelsius).");
        eq(7L, ScalarFunctionTool.convert(7, Long.class, "n"), "int to long");
        fails(() -> ScalarFunctionTool.convert(1.5, Integer.class, "n"), "does not fit Integer");
        fails(() -> ScalarFunctionTool.convert(null, int.class, "n"), "must not be null");
    }

    private static void chatModel() {
        String config =
                "{\"script\": [{\"content\": \"\", \"tool_calls\": [{\"function\": {\"name\":"
                        + " \"upper_case\", \"arguments\": {\"text\": \"{input}\"}}}]},"
                        + " \"done: {tool_result:0} via {option:model} tools={tools}\"],"
                        + " \"fail_when\": \"boom\"}";
        Handle model = (Handle) new Bridge().create("org.flinkagents.examples.ScriptedJavaChatModel", "chat_model", config);
        String tools = "[{\"type\":\"function\",\"function\":{\"name\":\"upper_case\"}}]";
        String first = model.chat("[{\"role\":\"user\",\"content\":\"hi\"}]", tools, "{\"model\":\"m1\"}");
        eq('0', first.charAt(0), "chat ok");
        Map<String, Object> reply = Json.parseObject(first.substring(1));
        Map<?, ?> call = (Map<?, ?>) ((List<?>) reply.get("tool_calls")).get(0);
        eq("call_0_0", call.get("id"), "call id");
        eq("hi", ((Map<?, ?>) ((Map<?, ?>) call.get("function")).get("arguments")).get("text"), "arg");
        String conversation =
                "[{\"role\":\"user\",\"content\":\"hi\"}," + first.substring(1)
                        + ",{\"role\":\"tool\",\"content\":\"HI\"}]";
        Map<String, Object> second =
                Json.parseObject(model.chat(conversation, tools, "{\"model\":\"m1\"}").substring(1));
        eq("done: HI via m1 tools=upper_case", second.get("content"), "second turn");
        contains(
                model.chat("[{\"role\":\"user\",\"content\":\"boom now\"}]", "[]", "{}"),
                "1java.lang.IllegalStateException: scripted failure");
        contains(model.call("{}"), "1java.lang.ClassCastException");
    }

    private static void embedding() {
        Handle emb = (Handle) new Bridge().create("org.flinkagents.examples.HashingEmbeddingModel", "embedding_model", "{\"dimension\": 4}");
        String out = emb.embed("[\"abc\", \"abc\", \"\"]", "{}");
        List<Object> vectors = Json.parseArray(out.substring(1));
        eq(3, vectors.size(), "one vector per text");
        eq(vectors.get(0), vectors.get(1), "deterministic");
        eq(4, ((List<?>) vectors.get(0)).size(), "dimension");
    }

    // -- tiny assertion helpers -----------------------------------------------------------

    private static void eq(Object expected, Object actual, String what) {
        checks++;
        if (expected == null ? actual != null : !expected.equals(actual)) {
            fail(what + ": expected <" + expected + "> but was <" + actual + ">");
        }
    }

    private static void contains(String actual, String part) {
        checks++;
        if (actual == null || !actual.contains(part)) {
            fail("expected <" + actual + "> to contain <" + part + ">");
        }
    }

    private static void fails(Runnable r, String part) {
        checks++;
        try {
            r.run();
        } catch (RuntimeException e) {
            if (e.getMessage() != null && e.getMessage().contains(part)) {
                return;
            }
            fail("wrong exception: " + e);
        }
        fail("expected an exception containing <" + part + ">");
    }

    private static void fail(String message) {
        System.err.println("java-bridge self test FAILED: " + message);
        System.exit(1);
    }
}
