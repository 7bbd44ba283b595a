package org.flinkagents.flink;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Unit test of {@link BeamReleaseFix.ReleasingSet} against a stand-in for Beam's {@code
 * WrappedSdkHarnessClient} (the same private field and method names), run by {@code build.py
 * --self-test} with plain {@code java}. Exits with status 1 on the first failure. The race
 * itself is exercised by {@code benchmarks/failover_stress.py} and the process-mode recovery
 * tests.
 */
public final class BeamReleaseFixSelfTest {

    private static int checks;

    private BeamReleaseFixSelfTest() {}

    /** Beam's client as far as the fix sees it. */
    static final class Client {
        private final AtomicInteger bundleRefCount = new AtomicInteger();
        private int closes;

        Client(int refs) {
            bundleRefCount.set(refs);
        }

        @SuppressWarnings("unused") // called by reflection, as Beam's close()
        private synchronized void close() {
            closes++;
        }
    }

    public static void main(String[] args) {
        BeamReleaseFix.ReleasingSet set = new BeamReleaseFix.ReleasingSet();

        // Evicted with two bundles still open: all references go at once, the worker closes.
        Client open = new Client(2);
        eq(false, set.add(open), "add keeps nothing");
        eq(0, open.bundleRefCount.get(), "references after the release");
        eq(1, open.closes, "closes of a client released with bundles open");

        // The last bundle's own unref got to zero (and closed it) before the release: nothing
        // more, above all no unref below zero (Beam's loop threw there).
        Client done = new Client(0);
        set.add(done);
        eq(0, done.bundleRefCount.get(), "references of a client released already");
        eq(0, done.closes, "closes by the fix of a client released already");

        // The set stays empty: the loop in DefaultJobBundleFactory.close() has nothing to do.
        eq(0, set.size(), "size");
        eq(false, set.iterator().hasNext(), "iterator");

        // A bundle that completes after the release unrefs below zero in its own thread, as
        // with Beam's loop: the fix does not close twice.
        open.bundleRefCount.decrementAndGet();
        set.add(open);
        eq(1, open.closes, "closes after a late bundle");

        System.out.println("BeamReleaseFix self test: " + checks + " checks passed");
    }

    private static void eq(Object expected, Object actual, String what) {
        checks++;
        if (!expected.equals(actual)) {
            System.err.println(
                    "BeamReleaseFix self test FAILED: "
                            + what
                            + ": expected <"
                            + expected
                            + "> but was <"
                            + actual
                            + ">");
            System.exit(1);
        }
    }
}
