package com.example;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.functions.ScalarFunction;

/** The FLIP draft's convert_to_celsius function, as a user would ship it in celsius.jar. */
public class ConvertToCelsius extends ScalarFunction {
    public Double eval(@ArgumentHint(name = "fahrenheit") Double fahrenheit) {
        return fahrenheit == null ? null : Math.round((fahrenheit - 32.0) * 50.0 / 9.0) / 10.0;
    }
}
