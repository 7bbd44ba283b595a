package org.flinkagents.examples;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.functions.ScalarFunction;

/**
 * A Flink scalar function that converts degrees Fahrenheit to Celsius, rounded to one decimal:
 * the function of the FLIP draft's {@code CREATE TOOL convert_to_celsius_tool USING FUNCTION
 * convert_to_celsius} example. Register it with {@code CREATE FUNCTION convert_to_celsius AS
 * 'org.flinkagents.examples.ConvertToCelsius' LANGUAGE JAVA}; usable in SQL queries too.
 */
public class ConvertToCelsius extends ScalarFunction {

    private static final long serialVersionUID = 1L;

    /**
     * Converts a temperature.
     *
     * @param fahrenheit degrees Fahrenheit
     * @return degrees Celsius, rounded to one decimal
     */
    public Double eval(@ArgumentHint(name = "fahrenheit") Double fahrenheit) {
        if (fahrenheit == null) {
            return null;
        }
        return Math.round((fahrenheit - 32.0) * 50.0 / 9.0) / 10.0;
    }
}
