package org.flinkagents.examples;

import org.flinkagents.bridge.JavaTool;

/** The cheapest possible Java tool: returns its arguments object. Used by the benchmark. */
public class EchoTool extends ExampleResource implements JavaTool {

    @Override
    public String name() {
        return configString("name", "echo");
    }

    @Override
    public String description() {
        return "Returns its arguments.";
    }

    @Override
    public String argsSchemaJson() {
        return "{\"type\":\"object\",\"properties\":{\"x\":{}}}";
    }

    @Override
    public String call(String argsJson) {
        return argsJson;
    }
}
