package org.flinkagents.flink;

import org.apache.flink.python.PythonFunctionRunner;
import org.apache.flink.runtime.memory.OpaqueMemoryResource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.AbstractSet;
import java.util.Collections;
import java.util.Iterator;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Makes Beam's forced release of a Python worker atomic, so that a failover no longer stops
 * PyFlink's TaskManager.
 *
 * <p>The race (PyFlink 2.3, Beam's {@code DefaultJobBundleFactory}; the process-mode Python
 * operators of a slot share one factory and one Python worker, and the last of them to close
 * closes the factory): each open bundle holds a reference on the worker's client
 * ({@code WrappedSdkHarnessClient.bundleRefCount}, plus one for the factory's cache). A failover
 * cancels an operator inside {@code invokeFinishBundle} while its flush thread still waits for
 * the worker to finish the bundle ({@code AbstractExternalPythonFunctionOperator.close()} shuts
 * that thread's pool down without waiting). Closing the factory with such a bundle open, the
 * cache's removal listener drops the cache's reference, sees references left and adds the
 * client to {@code evictedActiveClients}; {@code close()} then drops the rest one by one, {@code
 * while (client.unref() > 0) {}}. If the flush thread's bundle completes in between, its own
 * unref reaches zero and closes the worker, and the loop's next unref fails {@code checkState}:
 * "Reference count must not be negative." That exception leaves the operator's {@code close()},
 * which Flink runs in the task's failure handler, where an exception is fatal ("FATAL -
 * exception in exception handler of task"): the TaskManager stops, with its slot, and the
 * restart finds no slot. Seen here before this fix: 1 TaskManager lost in 38 failovers of a
 * one-slot job (a Python map, a {@code keyBy}, the agent); about 1 run in 15 of the recovery
 * test had been reported.
 *
 * <p>{@link #install} replaces the factory's {@code evictedActiveClients} with a set that
 * releases a client the moment it is added, atomically: it takes the remaining count to zero
 * with one compare-and-set and closes the worker (what Beam's loop means to do), unless a
 * bundle's own unref got to zero first and closed it. A bundle that completes afterwards
 * unrefs below zero in its own flush thread, as it already does when Beam's loop wins the race;
 * there PyFlink catches the exception, for an operator that is closed already. The set stays
 * empty, so the loop in {@code close()} has nothing to do.
 *
 * <p>The factory is shared by every Python operator of the slot (the Python map before a {@code
 * keyBy} too), so installing it from the agent operator covers the operator that happens to
 * close last. It reads and writes private fields of PyFlink 2.3 and Beam classes (the versions
 * this package pins); if one is missing it logs a warning and changes nothing.
 */
final class BeamReleaseFix {

    private static final Logger LOG = LoggerFactory.getLogger(BeamReleaseFix.class);

    private static final String FACTORY_CLASS =
            "org.apache.beam.runners.fnexecution.control.DefaultJobBundleFactory";

    private BeamReleaseFix() {}

    /** Installs the atomic release on the job bundle factory of {@code runner}'s worker. */
    static void install(PythonFunctionRunner runner) {
        try {
            Object factory = jobBundleFactory(runner);
            if (factory == null || !factory.getClass().getName().equals(FACTORY_CLASS)) {
                LOG.warn("No Beam DefaultJobBundleFactory behind {}; release unchanged", runner);
                return;
            }
            // The factory's close() holds its monitor: no close runs while the set changes.
            synchronized (factory) {
                if ((int) field(factory, "environmentExpirationMillis") > 0) {
                    // With expiry Beam evicts clients while bundles run, and keeps them in the
                    // set until those end: releasing on add would close live workers. PyFlink
                    // sets no expiry.
                    LOG.warn("Beam environment expiry is on; release unchanged");
                    return;
                }
                Field evicted = declaredField(factory.getClass(), "evictedActiveClients");
                Object current = evicted.get(factory);
                if (current instanceof ReleasingSet) {
                    return; // another agent operator of the slot installed it
                }
                if (!((Set<?>) current).isEmpty()) {
                    LOG.warn("Beam's factory has evicted workers already; release unchanged");
                    return;
                }
                evicted.set(factory, new ReleasingSet());
                LOG.info("Atomic release of evicted Beam workers installed");
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warn("Cannot install the atomic release on PyFlink's Beam factory", e);
        }
    }

    /** The runner's own factory, or the factory of the slot's shared Python worker. */
    private static Object jobBundleFactory(PythonFunctionRunner runner)
            throws ReflectiveOperationException {
        Object own = field(runner, "jobBundleFactory");
        if (own != null) {
            return own; // managed memory off: one worker per operator
        }
        Object shared = field(runner, "sharedResources");
        if (!(shared instanceof OpaqueMemoryResource)) {
            return null;
        }
        return field(((OpaqueMemoryResource<?>) shared).getResourceHandle(), "jobBundleFactory");
    }

    /**
     * Beam's {@code evictedActiveClients} that releases each client as it comes: the factory's
     * removal listener adds a client whose bundle references are not all released yet.
     */
    static final class ReleasingSet extends AbstractSet<Object> {

        @Override
        public boolean add(Object client) {
            release(client);
            return false;
        }

        @Override
        public Iterator<Object> iterator() {
            return Collections.emptyIterator();
        }

        @Override
        public int size() {
            return 0;
        }
    }

    /** All of the client's references at once, then its close (idempotent in Beam). */
    private static void release(Object client) {
        try {
            AtomicInteger refs = (AtomicInteger) field(client, "bundleRefCount");
            int left;
            do {
                left = refs.get();
                if (left <= 0) {
                    LOG.info("Evicted Beam worker released by its last bundle already");
                    return;
                }
            } while (!refs.compareAndSet(left, 0));
            LOG.info("Releasing an evicted Beam worker with {} bundle references left", left);
            Method close = client.getClass().getDeclaredMethod("close");
            close.setAccessible(true);
            close.invoke(client);
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warn("Releasing an evicted Beam worker failed", e);
        }
    }

    private static Object field(Object target, String name) throws ReflectiveOperationException {
        return declaredField(target.getClass(), name).get(target);
    }

    /** The field {@code name} declared by {@code type} or a superclass, made accessible. */
    private static Field declaredField(Class<?> type, String name) throws NoSuchFieldException {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // declared higher up
            }
        }
        throw new NoSuchFieldException(type.getName() + "." + name);
    }
}
