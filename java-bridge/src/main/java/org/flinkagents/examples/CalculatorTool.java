package org.flinkagents.examples;

import java.util.Map;
import org.flinkagents.bridge.JavaTool;
import org.flinkagents.bridge.Json;

/**
 * A Java tool doing arithmetic. Arguments: {@code {"a": number, "b": number, "op":
 * "add|sub|mul|div"}}; result: a JSON number. Dividing by zero throws {@code
 * ArithmeticException("division by zero")}, which tests use as a Java failure.
 */
public class CalculatorTool extends ExampleResource implements JavaTool {

    @Override
    public String name() {
        return configString("name", "calculator");
    }

    @Override
    public String description() {
        return "Computes a op b for op in add, sub, mul, div.";
    }

    @Override
    public String argsSchemaJson() {
        return "{\"type\":\"object\",\"properties\":{"
                + "\"a\":{\"type\":\"number\"},\"b\":{\"type\":\"number\"},"
                + "\"op\":{\"type\":\"string\",\"enum\":[\"add\",\"sub\",\"mul\",\"div\"]}},"
                + "\"required\":[\"a\",\"b\",\"op\"]}";
    }

    @Override
    public String call(String argsJson) {
        Map<String, Object> args = Json.parseObject(argsJson);
        double a = number(args, "a");
        double b = number(args, "b");
        String op = String.valueOf(args.get("op"));
        double result;
        switch (op) {
            case "add":
                result = a + b;
                break;
            case "sub":
                result = a - b;
                break;
            case "mul":
                result = a * b;
                break;
            case "div":
                if (b == 0) {
                    throw new ArithmeticException("division by zero");
                }
                result = a / b;
                break;
            default:
                throw new IllegalArgumentException("unknown op '" + op + "'");
        }
        if (result == Math.rint(result) && Math.abs(result) < 1e15) {
            return Long.toString((long) result);
        }
        return Json.write(result);
    }

    private static double number(Map<String, Object> args, String key) {
        Object value = args.get(key);
        if (!(value instanceof Number)) {
            throw new IllegalArgumentException("argument '" + key + "' must be a number");
        }
        return ((Number) value).doubleValue();
    }
}
