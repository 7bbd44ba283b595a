package org.flinkagents.flink;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.functions.python.DataStreamPythonFunctionInfo;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.python.process.AbstractExternalDataStreamPythonFunctionOperator;
import org.apache.flink.streaming.api.operators.python.process.ExternalPythonKeyedProcessOperator;
import org.apache.flink.types.Row;

import java.util.HashMap;
import java.util.Map;

/**
 * PyFlink's process-mode keyed process operator plus one hook: right before each checkpoint
 * barrier it finishes the open bundle, then hands the Python function a processing-time timer
 * at {@link #BARRIER_TIMER} (for the operator's current key), in a bundle of its own that the
 * barrier then finishes. The function takes a timer at that time for the barrier hook: it
 * writes the durable call records of every key with work in flight to keyed state (state
 * writes of a bundle reach the state backend when the bundle finishes, before the barrier).
 * The open bundle goes first because Beam's Python worker handles the timers of a data
 * message before its records: sent into the open bundle, the timer could run before inputs
 * that came ahead of it and miss the calls of the runs they start.
 *
 * <p>After the last bundle it registers the timers Python set in it, which PyFlink registers
 * only later, by mailbox mails that run after the snapshot: without that, the checkpoint held
 * a key's pending input (state writes are synchronous) but not the timer that resumes it, and
 * after a restore the key's run never resumed (unless the key got another input).
 *
 * <p>PyFlink's own operator runs no Python at a barrier when the current bundle is empty
 * ({@code invokeFinishBundle} does nothing then), so the timer is what makes the hook run at
 * every barrier. No timer is registered: the Python side gets it like a timer that fired.
 *
 * <p>{@link #copy} keeps this class when PyFlink's Python operator chaining merges the
 * function with the Python operators that follow it.
 *
 * <p>It tells the Python function whether this operator instance started from a checkpoint or
 * savepoint ({@link #RESTORED_PARAMETER}): keyed state can hold something from before only
 * then, and a function that started fresh skips the look for it that process mode's keyed state
 * otherwise makes for every new key (a blocking request to this JVM each).
 *
 * <p>{@link #open} installs {@link BeamReleaseFix} on the slot's Python worker: without it a
 * failover could stop the TaskManager (Beam's bundle reference count race) and leave the
 * restart without a slot.
 */
public class AgentExternalKeyedProcessOperator<OUT> extends ExternalPythonKeyedProcessOperator<OUT> {

    private static final long serialVersionUID = 1L;

    /**
     * Time of the barrier timer ({@code flink_agents.runtime.flink.entry.BARRIER_TIMER}; part of
     * the {@link Contract}).
     */
    public static final long BARRIER_TIMER = Long.MIN_VALUE;

    private transient boolean finished;

    /** Whether the operator's state was restored; null until {@link #initializeState}. */
    private transient Boolean restored;

    public AgentExternalKeyedProcessOperator(
            Configuration config,
            DataStreamPythonFunctionInfo pythonFunctionInfo,
            RowTypeInfo inputTypeInfo,
            TypeInformation<OUT> outputTypeInfo) {
        super(config, pythonFunctionInfo, inputTypeInfo, outputTypeInfo);
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        restored = context.isRestored();
    }

    @Override
    public void open() throws Exception {
        super.open();
        BeamReleaseFix.install(pythonFunctionRunner);
    }

    /**
     * Name of the parameter that carries Flink's job id to the Python function
     * ({@code flink_agents.runtime.flink._pyflink_internals.JOB_ID_PARAMETER}): PyFlink's
     * process-mode runtime context has no job id of its own, and the event log names its
     * files after it.
     */
    public static final String JOB_ID_PARAMETER = "flink-agents.job-id";

    /**
     * Name of the parameter that tells the Python function whether this operator instance was
     * restored ({@code "true"}: from a checkpoint or a savepoint, of any version; {@code
     * "false"}: it started without state, so its keyed state holds nothing from before; {@code
     * flink_agents.runtime.flink._pyflink_internals.RESTORED_PARAMETER}, part of the {@link
     * Contract}). Set from {@code StateInitializationContext.isRestored()}, which Flink calls
     * before {@link #open} makes the Python function runner; absent if it was not called (the
     * function then looks for state from before, as without this operator).
     */
    public static final String RESTORED_PARAMETER = "flink-agents.restored";

    @Override
    public Map<String, String> getInternalParameters() {
        Map<String, String> parameters = new HashMap<>(super.getInternalParameters());
        parameters.put(JOB_ID_PARAMETER, getRuntimeContext().getJobInfo().getJobId().toString());
        if (restored != null) {
            parameters.put(RESTORED_PARAMETER, restored.toString());
        }
        return parameters;
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        Object key = getCurrentKey();
        if (!finished && key instanceof Row) {
            // Before any element or timer there is no key, and nothing in flight either.
            // The open bundle first, so that the hook runs after its records (class comment).
            invokeFinishBundle();
            onProcessingTime(
                    new TimerHeapInternalTimer<Row, Object>(
                            BARRIER_TIMER, (Row) key, VoidNamespace.INSTANCE));
        }
        super.prepareSnapshotPreBarrier(checkpointId);
        // The timers Python set in these bundles go into this snapshot (class comment); the
        // mailbox mails PyFlink queued for them find them registered.
        drainUnregisteredTimers();
    }

    @Override
    public void finish() throws Exception {
        finished = true;
        super.finish();
    }

    @Override
    public void close() throws Exception {
        finished = true;
        super.close();
    }

    @Override
    public <T> AbstractExternalDataStreamPythonFunctionOperator<T> copy(
            DataStreamPythonFunctionInfo pythonFunctionInfo, TypeInformation<T> outputTypeInfo) {
        return new AgentExternalKeyedProcessOperator<>(
                config, pythonFunctionInfo, (RowTypeInfo) getInputTypeInfo(), outputTypeInfo);
    }
}
