package org.flinkagents.examples;

import java.util.Locale;
import java.util.Map;
import org.flinkagents.bridge.JavaTool;
import org.flinkagents.bridge.Json;

/**
 * A Java tool that upper-cases a text. Arguments: {@code {"text": str}}; result: a JSON string.
 * Configuration: {@code name} (default "upper_case") plus those of {@link ExampleResource}.
 */
public class UpperCaseTool extends ExampleResource implements JavaTool {

    @Override
    public String name() {
        return configString("name", "upper_case");
    }

    @Override
    public String description() {
        return "Returns the text in upper case.";
    }

    @Override
    public String argsSchemaJson() {
        return "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\","
                + "\"description\":\"the text to upper-case\"}},\"required\":[\"text\"]}";
    }

    @Override
    public String call(String argsJson) {
        Map<String, Object> args = Json.parseObject(argsJson);
        Object text = args.get("text");
        if (!(text instanceof String)) {
            throw new IllegalArgumentException("argument 'text' must be a string, got " + text);
        }
        return Json.quote(((String) text).toUpperCase(Locale.ROOT));
    }
}
