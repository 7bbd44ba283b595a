package org.flinkagents.bridge;

import java.lang.annotation.Annotation;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A tool that calls a Java scalar function of Flink's catalog ({@code CREATE TOOL t USING FUNCTION
 * f}, where {@code f} was created with {@code CREATE FUNCTION f AS 'com.acme.F' [LANGUAGE JAVA]
 * [USING JAR '...']}).
 *
 * <p>The function is a subclass of Flink's {@code ScalarFunction} with exactly one public {@code
 * eval} method; the model calls the tool with one argument per {@code eval} parameter. A parameter
 * is named by {@code @ArgumentHint(name = "...")} when it has one, else by its name in the class
 * file (compiled with {@code javac -parameters}), else {@code arg0}, {@code arg1}... Parameter and
 * result types: {@code String}, {@code boolean}, the integer types, {@code float}, {@code double}
 * and {@code BigDecimal} (boxed or not); anything else is refused when the tool is created.
 *
 * <p>Configuration ({@code open}): {@code function_class} (required), {@code tool_name}, {@code
 * tool_description}, {@code function} (the Flink function's name, for messages). The
 * function's {@code open(FunctionContext)} is called with a context that has no runtime context,
 * and its {@code close()} when the tool closes.
 *
 * <p>Nothing here links against Flink's table classes at compile time except through reflection,
 * so the class loads on every Flink version the bridge supports.
 */
public class ScalarFunctionTool implements JavaTool {

    private static final String SCALAR_FUNCTION =
            "org.apache.flink.table.functions.ScalarFunction";
    private static final String ARGUMENT_HINT = "org.apache.flink.table.annotation.ArgumentHint";
    private static final String FUNCTION_CONTEXT =
            "org.apache.flink.table.functions.FunctionContext";

    private Object function;
    private Method eval;
    private List<String> names;
    private String toolName;
    private String description;
    private String schemaJson;

    @Override
    public void open(String configJson) throws Exception {
        Map<String, Object> config = Json.parseObject(configJson);
        Object className = config.get("function_class");
        if (!(className instanceof String) || ((String) className).isEmpty()) {
            throw new IllegalArgumentException("configuration needs 'function_class'");
        }
        Class<?> clazz = load((String) className);
        String label = config.get("function") instanceof String ? (String) config.get("function")
                : clazz.getName();
        Object named = config.get("tool_name");
        toolName = named instanceof String ? (String) named : label;
        Object given = config.get("tool_description");
        description = given instanceof String && !((String) given).isEmpty()
                ? (String) given : defaultDescription(label, clazz);
        eval = evalMethod(clazz);
        names = parameterNames(eval);
        schemaJson = Json.write(schema(eval, names));
        Constructor<?> ctor = clazz.getConstructor();
        function = ctor.newInstance();
        invokeOpen(function);
    }

    @Override
    public void close() throws Exception {
        Object f = function;
        function = null;
        if (f != null) {
            f.getClass().getMethod("close").invoke(f);
        }
    }

    @Override
    public String name() {
        return toolName;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public String argsSchemaJson() {
        return schemaJson;
    }

    @Override
    public String call(String argsJson) throws Exception {
        Map<String, Object> args = Json.parseObject(argsJson);
        Class<?>[] types = eval.getParameterTypes();
        Object[] values = new Object[types.length];
        for (int i = 0; i < types.length; i++) {
            String name = names.get(i);
            if (!args.containsKey(name)) {
                throw new IllegalArgumentException("missing argument '" + name + "'");
            }
            values[i] = convert(args.get(name), types[i], name);
        }
        for (String key : args.keySet()) {
            if (!names.contains(key)) {
                throw new IllegalArgumentException(
                        "unknown argument '" + key + "' (arguments: " + names + ")");
            }
        }
        return Json.write(eval.invoke(function, values));
    }

    /**
     * The tool metadata of a function class: {@code {"name", "description", "args_schema"}}.
     *
     * <p>The client side calls it (through py4j) when a tool is created, so a function that
     * cannot be a tool is refused then, not on the first call.
     *
     * @param clazz the function's class
     * @param name the tool's name
     * @param description the tool's description (empty: one naming the function)
     * @param function the Flink function's name, for messages
     * @return the metadata as JSON
     * @throws IllegalArgumentException if the class cannot be a tool (the message says why)
     */
    public static String describe(
            Class<?> clazz, String name, String description, String function) {
        Method method = evalMethod(clazz);
        List<String> names = parameterNames(method);
        try {
            clazz.getConstructor();
        } catch (NoSuchMethodException e) {
            throw new IllegalArgumentException(
                    clazz.getName() + " has no public no-argument constructor");
        }
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("name", name);
        meta.put(
                "description",
                description == null || description.isEmpty()
                        ? defaultDescription(function, clazz)
                        : description);
        meta.put("args_schema", schema(method, names));
        meta.put("unnamed", names.stream().anyMatch(n -> n.matches("arg[0-9]+")));
        return Json.write(meta);
    }

    private static String defaultDescription(String function, Class<?> clazz) {
        return "Calls the Flink function " + function + " (" + clazz.getName() + ").";
    }

    private static Class<?> load(String className) throws ClassNotFoundException {
        ClassNotFoundException last = null;
        for (ClassLoader loader :
                new ClassLoader[] {
                    Thread.currentThread().getContextClassLoader(),
                    ScalarFunctionTool.class.getClassLoader()
                }) {
            if (loader == null) {
                continue;
            }
            try {
                return Class.forName(className, true, loader);
            } catch (ClassNotFoundException e) {
                last = e;
            }
        }
        throw last != null ? last : new ClassNotFoundException(className);
    }

    static Method evalMethod(Class<?> clazz) {
        if (!isScalarFunction(clazz)) {
            throw new IllegalArgumentException(
                    clazz.getName()
                            + " is not a Flink ScalarFunction; a tool calls a scalar function"
                            + " (a table or aggregate function cannot answer a model)");
        }
        if (Modifier.isAbstract(clazz.getModifiers())) {
            throw new IllegalArgumentException(clazz.getName() + " is abstract");
        }
        List<Method> evals = new ArrayList<>();
        for (Method m : clazz.getMethods()) {
            if (m.getName().equals("eval") && !Modifier.isStatic(m.getModifiers())) {
                evals.add(m);
            }
        }
        if (evals.size() != 1) {
            throw new IllegalArgumentException(
                    clazz.getName()
                            + " has "
                            + evals.size()
                            + " public eval methods; a tool needs exactly one (the model"
                            + " calls it with one argument per parameter)");
        }
        Method method = evals.get(0);
        if (method.isVarArgs()) {
            throw new IllegalArgumentException(
                    clazz.getName() + ".eval takes variable arguments, which a model cannot name");
        }
        for (Class<?> type : method.getParameterTypes()) {
            jsonType(type, clazz.getName() + ".eval parameter");
        }
        if (method.getReturnType() == void.class) {
            throw new IllegalArgumentException(clazz.getName() + ".eval returns nothing");
        }
        jsonType(method.getReturnType(), clazz.getName() + ".eval result");
        return method;
    }

    private static boolean isScalarFunction(Class<?> clazz) {
        for (Class<?> c = clazz; c != null; c = c.getSuperclass()) {
            if (c.getName().equals(SCALAR_FUNCTION)) {
                return true;
            }
        }
        return false;
    }

    static List<String> parameterNames(Method method) {
        List<String> names = new ArrayList<>();
        Parameter[] params = method.getParameters();
        for (int i = 0; i < params.length; i++) {
            String hinted = hintedName(params[i]);
            if (hinted != null && !hinted.isEmpty()) {
                names.add(hinted);
            } else if (params[i].isNamePresent()) {
                names.add(params[i].getName());
            } else {
                names.add("arg" + i);
            }
        }
        return names;
    }

    private static String hintedName(Parameter param) {
        for (Annotation a : param.getAnnotations()) {
            if (a.annotationType().getName().equals(ARGUMENT_HINT)) {
                try {
                    Object name = a.annotationType().getMethod("name").invoke(a);
                    return name instanceof String ? (String) name : null;
                } catch (ReflectiveOperationException e) {
                    return null;
                }
            }
        }
        return null;
    }

    static String jsonType(Class<?> type, String where) {
        if (type == String.class) {
            return "string";
        }
        if (type == boolean.class || type == Boolean.class) {
            return "boolean";
        }
        if (type == int.class || type == Integer.class || type == long.class || type == Long.class
                || type == short.class || type == Short.class || type == byte.class
                || type == Byte.class) {
            return "integer";
        }
        if (type == double.class || type == Double.class || type == float.class
                || type == Float.class || type == BigDecimal.class) {
            return "number";
        }
        throw new IllegalArgumentException(
                where
                        + " has type "
                        + type.getName()
                        + ", which a model cannot pass as JSON (use String, boolean, an integer"
                        + " type, float, double or BigDecimal)");
    }

    private static Map<String, Object> schema(Method method, List<String> names) {
        Map<String, Object> properties = new LinkedHashMap<>();
        List<Object> required = new ArrayList<>();
        Class<?>[] types = method.getParameterTypes();
        for (int i = 0; i < types.length; i++) {
            Map<String, Object> prop = new LinkedHashMap<>();
            prop.put("type", jsonType(types[i], "eval parameter"));
            properties.put(names.get(i), prop);
            required.add(names.get(i));
        }
        Map<String, Object> schema = new LinkedHashMap<>();
        schema.put("type", "object");
        schema.put("properties", properties);
        schema.put("required", required);
        return schema;
    }

    private static void invokeOpen(Object function) throws Exception {
        Class<?> contextClass = load(FUNCTION_CONTEXT);
        Object context = null;
        for (Constructor<?> c : contextClass.getConstructors()) {
            if (c.getParameterCount() == 1) {
                context = c.newInstance(new Object[] {null});
                break;
            }
        }
        if (context == null) {
            return; // no context we can make on this Flink: the function keeps its defaults
        }
        function.getClass().getMethod("open", contextClass).invoke(function, context);
    }

    static Object convert(Object value, Class<?> type, String name) {
        if (value == null) {
            if (type.isPrimitive()) {
                throw new IllegalArgumentException("argument '" + name + "' must not be null");
            }
            return null;
        }
        try {
            if (type == String.class) {
                if (value instanceof String) {
                    return value;
                }
            } else if (type == boolean.class || type == Boolean.class) {
                if (value instanceof Boolean) {
                    return value;
                }
            } else if (value instanceof Number) {
                Number n = (Number) value;
                boolean whole = n instanceof Long || n instanceof Integer;
                if (type == long.class || type == Long.class) {
                    return whole ? n.longValue() : exact(n).longValueExact();
                }
                if (type == int.class || type == Integer.class) {
                    return whole ? Math.toIntExact(n.longValue()) : exact(n).intValueExact();
                }
                if (type == short.class || type == Short.class) {
                    return exact(n).shortValueExact();
                }
                if (type == byte.class || type == Byte.class) {
                    return exact(n).byteValueExact();
                }
                if (type == double.class || type == Double.class) {
                    return n.doubleValue();
                }
                if (type == float.class || type == Float.class) {
                    return n.floatValue();
                }
                if (type == BigDecimal.class) {
                    return exact(n);
                }
            }
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(
                    "argument '" + name + "' = " + value + " does not fit " + type.getSimpleName());
        }
        throw new IllegalArgumentException(
                "argument '"
                        + name
                        + "' must be "
                        + jsonType(type, "argument")
                        + ", got "
                        + Json.write(value));
    }

    private static BigDecimal exact(Number n) {
        return new BigDecimal(n.toString());
    }
}
