package org.flinkagents.bridge;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

/**
 * The entry point the Python side uses (through pemja) to find and create Java resources.
 *
 * <p>Python obtains one instance per interpreter: it loads this class through the thread's context
 * classloader (the Flink user-code classloader, which sees the jars added with {@code
 * env.add_jars}; pemja's own {@code findClass} does not) and calls {@code newInstance()}. From
 * then on it only calls instance methods, which need no reflection on the Python side.
 *
 * <p>Nothing here throws into Python: a failure is returned as a value (a {@code String} message
 * from {@link #check} and {@link #create}, an error envelope from {@link Handle}), because an
 * exception thrown through pemja loses its type and, for some {@code Error}s, cannot be caught in
 * Python at all.
 */
public final class Bridge {

    /** Version of the contract between this jar and the Python package. */
    public static final String CONTRACT_VERSION = "1";

    private final ClassLoader creatorLoader;

    /** Remembers the context classloader of the creating thread (the operator thread). */
    public Bridge() {
        this.creatorLoader = Thread.currentThread().getContextClassLoader();
    }

    /** The contract version; Python checks it matches its own. */
    public String version() {
        return CONTRACT_VERSION;
    }

    /**
     * Checks that a resource class can be created.
     *
     * @param className fully qualified name of the class
     * @param kind "tool", "chat_model", "embedding_model" or "vector_store"
     * @return an empty string if it can, otherwise what is wrong
     */
    public String check(String className, String kind) {
        try {
            resolve(className, kind);
            return "";
        } catch (Throwable t) {
            return describeFailure(t);
        }
    }

    /**
     * Creates and opens a resource.
     *
     * @param className fully qualified name of the class
     * @param kind "tool", "chat_model", "embedding_model" or "vector_store"
     * @param configJson the configuration, a JSON object
     * @return a {@link Handle} on success, otherwise a {@code String} saying what is wrong
     */
    public Object create(String className, String kind, String configJson) {
        JavaResource resource;
        try {
            Class<?> clazz = resolve(className, kind);
            Constructor<?> ctor = clazz.getConstructor();
            resource = (JavaResource) ctor.newInstance();
        } catch (Throwable t) {
            return describeFailure(t);
        }
        // open() runs with the job's classloader as the context loader: a resource that loads
        // classes of the job's jars by name (a Flink function of a USING JAR jar) finds them
        // whatever thread Python calls from.
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        try {
            if (creatorLoader != null) {
                thread.setContextClassLoader(creatorLoader);
            }
            resource.open(configJson == null ? "{}" : configJson);
        } catch (Throwable t) {
            try {
                resource.close();
            } catch (Throwable ignored) {
                // the open failure is what matters
            }
            return "open() failed: " + describe(t);
        } finally {
            thread.setContextClassLoader(previous);
        }
        return new Handle(resource, kind);
    }

    private Class<?> resolve(String className, String kind) throws ClassNotFoundException {
        Class<?> expected = interfaceFor(kind);
        Class<?> clazz = load(className);
        if (!expected.isAssignableFrom(clazz)) {
            throw new IllegalArgumentException(
                    className
                            + " does not implement "
                            + expected.getName()
                            + (JavaResource.class.isAssignableFrom(clazz)
                                    ? " (it is a different kind of Java resource)"
                                    : ""));
        }
        if (clazz.isInterface() || Modifier.isAbstract(clazz.getModifiers())) {
            throw new IllegalArgumentException(className + " is abstract");
        }
        try {
            clazz.getConstructor();
        } catch (NoSuchMethodException e) {
            throw new IllegalArgumentException(
                    className + " has no public no-argument constructor");
        }
        return clazz;
    }

    private Class<?> load(String className) throws ClassNotFoundException {
        ClassNotFoundException last = null;
        for (ClassLoader loader : loaders()) {
            try {
                return Class.forName(className, true, loader);
            } catch (ClassNotFoundException e) {
                last = e;
            }
        }
        throw last != null ? last : new ClassNotFoundException(className);
    }

    private List<ClassLoader> loaders() {
        List<ClassLoader> loaders = new ArrayList<>(3);
        for (ClassLoader loader :
                new ClassLoader[] {
                    creatorLoader,
                    Thread.currentThread().getContextClassLoader(),
                    Bridge.class.getClassLoader()
                }) {
            if (loader != null && !loaders.contains(loader)) {
                loaders.add(loader);
            }
        }
        return loaders;
    }

    static Class<?> interfaceFor(String kind) {
        switch (kind) {
            case "tool":
                return JavaTool.class;
            case "chat_model":
                return JavaChatModel.class;
            case "embedding_model":
                return JavaEmbeddingModel.class;
            case "vector_store":
                return JavaVectorStore.class;
            default:
                throw new IllegalArgumentException(
                        "unknown Java resource kind '"
                                + kind
                                + "' (expected tool, chat_model, embedding_model or"
                                + " vector_store)");
        }
    }

    private static String describeFailure(Throwable t) {
        if (t instanceof ClassNotFoundException) {
            return "class not found: "
                    + t.getMessage()
                    + " (is its jar added to the job? use env.add_jars or the"
                    + " 'java-bridge.jars' option)";
        }
        if (t instanceof NoClassDefFoundError) {
            return "a class it needs is missing: " + describe(t);
        }
        return describe(t);
    }

    /**
     * Renders an exception for Python: the first line is {@code class: message} of the exception
     * (unwrapping reflection wrappers), then its causes and a few stack frames.
     *
     * @param t the exception
     * @return the text
     */
    public static String describe(Throwable t) {
        while ((t instanceof InvocationTargetException
                        || t instanceof ExceptionInInitializerError)
                && t.getCause() != null) {
            t = t.getCause();
        }
        StringBuilder sb = new StringBuilder();
        sb.append(t.getClass().getName());
        if (t.getMessage() != null) {
            sb.append(": ").append(t.getMessage());
        }
        // the user's frames only: the bridge's own and pemja's below them are noise
        StackTraceElement[] frames = t.getStackTrace();
        for (int i = 0; i < Math.min(frames.length, 8); i++) {
            String cls = frames[i].getClassName();
            if (cls.equals(Handle.class.getName()) || cls.equals(Bridge.class.getName())) {
                break;
            }
            sb.append("\n\tat ").append(frames[i]);
        }
        Throwable cause = t.getCause();
        int depth = 0;
        while (cause != null && cause != t && depth++ < 5) {
            sb.append("\nCaused by: ").append(cause.getClass().getName());
            if (cause.getMessage() != null) {
                sb.append(": ").append(cause.getMessage());
            }
            cause = cause.getCause();
        }
        return sb.toString();
    }
}
