package org.flinkagents.flink;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.BasicTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.functions.python.DataStreamPythonFunctionInfo;
import org.apache.flink.streaming.api.operators.python.embedded.AbstractEmbeddedDataStreamPythonFunctionOperator;
import org.apache.flink.streaming.api.operators.python.embedded.AbstractEmbeddedPythonFunctionOperator;
import org.apache.flink.streaming.api.operators.python.embedded.AbstractOneInputEmbeddedPythonFunctionOperator;
import org.apache.flink.streaming.api.operators.python.embedded.EmbeddedPythonKeyedProcessOperator;
import org.apache.flink.streaming.api.utils.PythonTypeUtils;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * PyFlink's thread-mode keyed process operator plus one hook: right before each checkpoint
 * barrier it calls into the Python function, which writes the durable call records of every
 * key with work in flight to keyed state (a PyFlink {@code KeyedProcessFunction} can only
 * write state of the current key from {@code process_element} / {@code on_timer}, and the
 * embedded operator's own {@link #prepareSnapshotPreBarrier} runs no Python at all).
 *
 * <p>The calls into Python are the entry points of {@code flink_agents.runtime.flink.entry},
 * whose {@code CONTRACT_VERSION} must equal {@link Contract#VERSION} (checked here first, and by
 * Python when it is called; on a mismatch the operator warns and runs as PyFlink's own).
 *
 * <p>The hook is the Python object that {@code entry.claim_barrier_hook(version)} returns right
 * after the function's {@code open()}, kept as a global
 * of this operator's interpreter; its {@code before_barrier(checkpoint_id)} is called the way
 * the operator calls {@code operation.on_timer} ({@code invokeMethod}: pemja's
 * {@code invoke} of a global function crashed the JVM in {@code func_dealloc} here). It runs
 * on the task thread, the thread that runs every other call of the function; it switches the
 * keyed state backend's current key itself and puts the previous key back.
 *
 * <p>The interpreter is reached by reflection, never through the {@code pemja} type: this
 * class comes from a user jar, loaded child first, and {@code flink run -py} puts
 * flink-python (with pemja) among the job's jars too, so linking {@code pemja.core
 * .PythonInterpreter} from here loads a second copy of it (a loader constraint violation).
 *
 * <p>Right after the hook, PyFlink's Python operation object is swapped for the one that
 * {@code entry.lean_operation(operation, hook)} returns: the same calls, with a shorter per-record path
 * (or PyFlink's own object when anything about it is unexpected). With it in place, inputs
 * reach Python in batches ({@code batch.size}): buffered here with their keys and timestamps,
 * handed over in one call when the batch is full, {@code batch.linger-ms} after its first
 * input, and before every checkpoint barrier (ahead of the hook), watermark and the end of
 * input. A batch's first input goes at once, alone, when it came after an idle gap of at least
 * {@code batch.linger-ms} or when inputs have been arriving more than a quarter of it apart
 * on average (fewer than ~4 would join it within the linger): at a low rate no input waits
 * for a batch that will not fill, also when two inputs happen to arrive close together.
 * Python switches the keyed state backend to an input's key when it uses state or timers; each
 * output comes back with its input's timestamp code, which sets the record's timestamp here.
 * The batches handed over are counted by what sent them (accumulators
 * {@code flink-agents.batches.<cause>}, see {@link #CAUSES}: in the job's result and the web
 * UI's Accumulators tab).
 *
 * <p>With batches, the backpressure of a full slot ({@code max-in-flight}) happens here, not in
 * Python: before it starts a batch the operator waits until the slot has a free place ({@code
 * wait_for_room}, in slices of {@link #ROOM_WAIT_MS}) and runs its mailbox between the slices
 * (every mail, checkpoint barriers too: an unaligned barrier does not wait for the calls, and
 * timers emit the results meanwhile). The batch's inputs then never wait in Python: one
 * without a free place queues in the slot and starts when a place frees, so at most {@code
 * max-in-flight} inputs run and at most a batch more waits (the input that started the batch
 * is buffered before the wait: a checkpoint taken meanwhile flushes it into keyed state).
 *
 * <p>The job's hourly token budget ({@code budget.tokens-per-job-per-hour}) is counted per subtask
 * in Python; the count goes into this operator's union list state {@link #JOB_BUDGET} with each
 * checkpoint ({@code BarrierHook.job_budget_state}) and back to Python after a restore ({@code
 * BarrierHook.restore_job_budget}, every old subtask's entry: after a rescale each subtask takes
 * an equal share of the job's count).
 *
 * <p>{@link #copy} keeps this class when PyFlink's Python operator chaining merges the
 * function with the Python operators that follow it.
 */
public class AgentKeyedProcessOperator<K, IN, OUT>
        extends EmbeddedPythonKeyedProcessOperator<K, IN, OUT> {

    private static final long serialVersionUID = 1L;

    private static final Logger LOG = LoggerFactory.getLogger(AgentKeyedProcessOperator.class);

    /** Name of the hook in the operator's Python interpreter. */
    static final String HOOK = "__flink_agents_before_barrier";

    /** Name of the entry-point module in the operator's Python interpreter. */
    static final String ENTRY = "__flink_agents_entry";

    /**
     * Warnings already logged, by kind: once per job (the class is loaded with the job's jars, by
     * the job's classloader).
     */
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

    private final TypeInformation<IN> inputType;

    /** The operator's {@code pemja.core.PythonInterpreter}; null: no hook. */
    private transient Object python;

    private transient Method invokeMethod;

    /** Name of the flag telling whether the lean operation is in place. */
    static final String LEAN = "__flink_agents_is_lean";

    /**
     * Whether {@code operation} is the lean stand-in, whose {@code process_element_list} returns
     * a record's outputs as one list: one call into Python per record instead of PyFlink's
     * iterator protocol (a call for the generator, then {@code hasNext}, {@code next} and
     * {@code close}, each through reflection).
     */
    private transient boolean lean;

    private transient PythonTypeUtils.DataConverter<IN, Object> inputConverter;

    private transient PythonTypeUtils.DataConverter<OUT, Object> outputConverter;

    /** Inputs per Python call ({@code batch.size}; 1: no batching) and the longest wait (ms). */
    private transient int batchSize;

    private transient long lingerMs;

    /** Inputs waiting for their batch: {@code [key, converted input, timestamp]} each. */
    private transient List<Object[]> buffer;

    private transient boolean flushScheduled;

    /** Longest wait in Python for a free in-flight place before the mailbox runs again (ms). */
    static final long ROOM_WAIT_MS = 20;

    /**
     * Runs any mail of the task (priority {@link TaskMailbox#MIN_PRIORITY}) while a batch waits
     * for a free place; null: the batch waits in Python (the slot's blocking gate).
     */
    private transient MailboxExecutor anyMail;

    /** Name of the operator state holding the subtasks' counts of the job's hourly budget. */
    static final String JOB_BUDGET = "fa-job-budget";

    private transient ListState<String> jobBudget;

    /** The entries {@link #JOB_BUDGET} held after a restore, for Python once it is open. */
    private transient List<String> restoredJobBudget;

    /**
     * Why a batch went to Python, the accumulators' name suffixes: full ({@code batch.size}),
     * linger ({@code batch.linger-ms} after its first input), idle (its only input came after
     * an idle gap of at least the linger), sparse (its only input came while inputs arrive
     * more than a quarter of the linger apart on average), barrier, watermark, end (of input).
     */
    static final String[] CAUSES = {
        "full", "linger", "idle", "sparse", "barrier", "watermark", "end"
    };

    private static final int FULL = 0;
    private static final int LINGER = 1;
    private static final int IDLE = 2;
    private static final int SPARSE = 3;
    private static final int BARRIER = 4;
    private static final int WATERMARK = 5;
    private static final int END = 6;

    /** Batches handed over, by cause (index into {@link #CAUSES}). */
    private transient LongCounter[] batches;

    /**
     * When the last input arrived or the last batch was processed ({@link System#nanoTime}): an
     * input that comes after an idle gap of at least {@code batch.linger-ms} goes to Python at
     * once instead of waiting for a batch that a slow input would not fill (the low-rate
     * latency).
     */
    private transient long lastInputNanos;

    /**
     * The average gap before an input (moving, weight 1/8; each gap counted as at most the
     * linger, so that one long pause does not hide a burst that follows it): above a quarter
     * of the linger, a batch's first input goes at once.
     */
    private transient long averageGapNanos;

    public AgentKeyedProcessOperator(
            Configuration config,
            DataStreamPythonFunctionInfo pythonFunctionInfo,
            TypeInformation<IN> inputTypeInfo,
            TypeInformation<OUT> outputTypeInfo) {
        super(config, pythonFunctionInfo, inputTypeInfo, outputTypeInfo);
        this.inputType = inputTypeInfo;
    }

    @Override
    public void openPythonInterpreter() {
        super.openPythonInterpreter();
        try {
            Field field = AbstractEmbeddedPythonFunctionOperator.class.getDeclaredField("interpreter");
            field.setAccessible(true);
            Object interpreter = field.get(this);
            Method exec = interpreter.getClass().getMethod("exec", String.class);
            Method get = interpreter.getClass().getMethod("get", String.class);
            exec.invoke(interpreter, "import flink_agents.runtime.flink.entry as " + ENTRY);
            exec.invoke(interpreter, ENTRY + "_version = " + ENTRY + ".CONTRACT_VERSION");
            Object version = get.invoke(interpreter, ENTRY + "_version");
            if (!Contract.VERSION.equals(version)) {
                throw new IllegalStateException(
                        "the workers' flink_agents speaks entry contract "
                                + version
                                + ", the bridge jar "
                                + Contract.VERSION
                                + ": install the same flink-agents on the workers as on the"
                                + " client, or rebuild the jar (make java)");
            }
            // Python checks the version too (and raises, caught below, on a mismatch).
            exec.invoke(
                    interpreter,
                    HOOK + " = " + ENTRY + ".claim_barrier_hook('" + Contract.VERSION + "')");
            // PyFlink's operation object is global "operation", looked up per record: a
            // leaner stand-in for the function's per-record path (or the same object).
            exec.invoke(
                    interpreter,
                    "operation = " + ENTRY + ".lean_operation(operation, " + HOOK + ")");
            exec.invoke(
                    interpreter, LEAN + " = hasattr(operation, 'process_element_list')");
            Object isLean = get.invoke(interpreter, LEAN);
            // The data converters are set after this method: taken in open().
            lean = Boolean.TRUE.equals(isLean);
            invokeMethod =
                    interpreter
                            .getClass()
                            .getMethod("invokeMethod", String.class, String.class, Object[].class);
            python = interpreter;
        } catch (ReflectiveOperationException | RuntimeException e) {
            // E.g. another flink_agents on the workers: run as the plain operator.
            warnOnce(
                    "hook",
                    "flink-agents: fast paths barrier-hook, lean-operation and batches not"
                            + " engaged, the function runs as in PyFlink's operator (durable call"
                            + " records are saved at timers only)",
                    e);
        }
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        jobBudget =
                context.getOperatorStateStore()
                        .getUnionListState(
                                new ListStateDescriptor<>(
                                        JOB_BUDGET, BasicTypeInfo.STRING_TYPE_INFO));
        restoredJobBudget = new ArrayList<>();
        if (context.isRestored()) {
            for (String entry : jobBudget.get()) {
                restoredJobBudget.add(entry);
            }
        }
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        // Union list state: each subtask writes its own entry only (a restore hands every
        // subtask all of them).
        jobBudget.clear();
        if (python != null) {
            Object mine = call(HOOK, "job_budget_state", subtaskIndex(), parallelism());
            if (mine != null) {
                jobBudget.add(mine.toString());
            }
        }
    }

    private int subtaskIndex() {
        return getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
    }

    private int parallelism() {
        return getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
    }

    @Override
    public void open() throws Exception {
        super.open();
        if (python != null && restoredJobBudget != null && !restoredJobBudget.isEmpty()) {
            call(
                    HOOK,
                    "restore_job_budget",
                    restoredJobBudget.toArray(new Object[0]),
                    subtaskIndex(),
                    parallelism());
        }
        restoredJobBudget = null;
        if (lean) {
            try {
                inputConverter =
                        converter(
                                AbstractOneInputEmbeddedPythonFunctionOperator.class,
                                "inputDataConverter");
                outputConverter =
                        converter(
                                AbstractOneInputEmbeddedPythonFunctionOperator.class
                                        .getSuperclass(),
                                "outputDataConverter");
            } catch (ReflectiveOperationException | RuntimeException e) {
                warnOnce(
                        "converters",
                        "flink-agents: fast paths lean-operation and batches not engaged: PyFlink's"
                                + " operator has no data converter fields as in 2.3, its"
                                + " per-record path is kept",
                        e);
                lean = false;
            }
            if (inputConverter == null || outputConverter == null) {
                lean = false;
            }
        }
        batchSize = 1;
        if (lean) {
            Object[] settings = items(call("operation", "batch_settings"));
            long size = ((Number) settings[0]).longValue();
            if (size > 1) {
                batchSize = (int) size;
                lingerMs = Math.max(1, ((Number) settings[1]).longValue());
                buffer = new ArrayList<>(batchSize);
                // The first input comes after a gap (nanoTime's origin is arbitrary).
                lastInputNanos = System.nanoTime() - lingerMs * 1_000_000L;
                averageGapNanos = lingerMs * 1_000_000L;
                batches = new LongCounter[CAUSES.length];
                for (int i = 0; i < CAUSES.length; i++) {
                    // Get-or-add: two agent operators chained in one task share them.
                    batches[i] =
                            getRuntimeContext().getLongCounter("flink-agents.batches." + CAUSES[i]);
                }
                admitBatches();
            }
        }
    }

    /** Waits for free places here, between mails, instead of in Python (see the class). */
    private void admitBatches() {
        try {
            MailboxExecutor mail =
                    getContainingTask()
                            .getMailboxExecutorFactory()
                            .createExecutor(TaskMailbox.MIN_PRIORITY);
            call("operation", "admit_batches");
            anyMail = mail;
        } catch (Exception | LinkageError e) {
            warnOnce(
                    "room",
                    "flink-agents: a batch waits for its in-flight places in Python (a checkpoint"
                            + " barrier waits for it too)",
                    e);
        }
    }

    /**
     * Returns once the slot has a free in-flight place, running the task's mails (timers,
     * checkpoints) while it waits: the backpressure of a batch.
     */
    private void awaitRoom() throws Exception {
        long slice = 0;
        while (!Boolean.TRUE.equals(call("operation", "wait_for_room", slice))) {
            while (anyMail.tryYield()) {
                // each mail runs; the next slice looks at the slot again
            }
            slice = ROOM_WAIT_MS;
        }
    }

    /** Logs {@code message} with {@code error}'s cause, once per job and {@code kind}. */
    private static void warnOnce(String kind, String message, Throwable error) {
        if (WARNED.add(kind)) {
            Throwable cause =
                    error instanceof InvocationTargetException && error.getCause() != null
                            ? error.getCause()
                            : error;
            LOG.warn(message + ": " + cause, cause);
        }
    }

    /** {@code value} with its object arrays (nested too) copied. */
    private static Object copy(Object value) {
        if (!(value instanceof Object[])) {
            return value;
        }
        Object[] copied = ((Object[]) value).clone();
        for (int i = 0; i < copied.length; i++) {
            copied[i] = copy(copied[i]);
        }
        return copied;
    }

    /** The items of a Python list as pemja hands it over (a List or an array). */
    private static Object[] items(Object list) {
        if (list instanceof List) {
            return ((List<?>) list).toArray();
        }
        if (list instanceof Object[]) {
            return (Object[]) list;
        }
        throw new IllegalStateException(
                "flink-agents: the lean operation returned "
                        + (list == null ? "None" : "a " + list.getClass().getName())
                        + ", not a list");
    }

    /** {@code object.method(args)} in the operator's interpreter; Python errors unwrapped. */
    private Object call(String object, String method, Object... args) throws Exception {
        try {
            return invokeMethod.invoke(python, object, method, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            throw cause instanceof Exception ? (Exception) cause : e;
        }
    }

    @SuppressWarnings("unchecked")
    private <T> PythonTypeUtils.DataConverter<T, Object> converter(Class<?> owner, String name)
            throws ReflectiveOperationException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return (PythonTypeUtils.DataConverter<T, Object>) field.get(this);
    }

    @Override
    public void processElement(StreamRecord<IN> element) throws Exception {
        if (!lean) {
            super.processElement(element);
            return;
        }
        if (batchSize > 1) {
            long ts = element.hasTimestamp() ? element.getTimestamp() : Long.MIN_VALUE;
            // PyFlink's converter reuses its arrays from one input to the next: copied.
            buffer.add(
                    new Object[] {
                        getCurrentKey(), copy(inputConverter.toExternal(element.getValue())), ts
                    });
            long arrived = System.nanoTime();
            long lingerNanos = lingerMs * 1_000_000L;
            long gap = Math.min(Math.max(arrived - lastInputNanos, 0L), lingerNanos);
            averageGapNanos += (gap - averageGapNanos) / 8;
            lastInputNanos = arrived;
            if (anyMail != null && buffer.size() == 1) {
                // A batch starts: wait for a free place (mails run meanwhile; a timer or a
                // checkpoint may flush the buffer).
                awaitRoom();
                if (buffer.isEmpty()) {
                    return;
                }
            }
            if (buffer.size() == 1 && gap >= lingerNanos) {
                flush(IDLE);
            } else if (buffer.size() == 1 && averageGapNanos * 4 > lingerNanos) {
                flush(SPARSE);
            } else if (buffer.size() >= batchSize) {
                flush(FULL);
            } else if (!flushScheduled) {
                flushScheduled = true;
                ProcessingTimeService time = getProcessingTimeService();
                time.registerTimer(
                        time.getCurrentProcessingTime() + lingerMs,
                        now -> {
                            flushScheduled = false;
                            flush(LINGER);
                        });
            }
            return;
        }
        // What PyFlink's processElement does, with the outputs coming back as one list.
        collector.setTimestamp(element);
        timestamp = element.getTimestamp();
        Object outputs =
                call(
                        "operation",
                        "process_element_list",
                        inputConverter.toExternal(element.getValue()));
        for (Object output : items(outputs)) {
            collector.collect(outputConverter.toInternal(output));
        }
    }

    /**
     * Hands the buffered inputs to Python in one call and emits their outputs, each with its
     * input's timestamp (taken from the output's timestamp code, so that records are the same as
     * without batching also when the timestamp operator only unwraps). {@code cause}: what sent
     * it, counted.
     */
    private void flush(int cause) throws Exception {
        if (buffer == null || buffer.isEmpty()) {
            return;
        }
        batches[cause].add(1L);
        Object[] batch = buffer.toArray();
        buffer.clear();
        // The batch is an Object[]: wrapped, or varargs would spread it into arguments.
        for (Object output : items(call("operation", "process_batch", new Object[] {batch}))) {
            long code = CarriedTimestampOperator.code((byte[]) output);
            if (code == CarriedTimestampOperator.KEEP || code == CarriedTimestampOperator.NONE) {
                collector.eraseTimestamp();
            } else {
                collector.setAbsoluteTimestamp(code);
            }
            collector.collect(outputConverter.toInternal(output));
        }
        // The gap that sends an input at once is idle time: the time spent on this batch does
        // not count (a batch that takes longer than the linger is not followed by one of one).
        lastInputNanos = System.nanoTime();
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        flush(WATERMARK); // inputs before the watermark are processed before its timers fire
        super.processWatermark(mark);
    }

    @Override
    public void endInput() {
        try {
            flush(END);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
        super.endInput();
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        // Inputs before the barrier are processed (finished, or waiting in keyed state)
        // before their durable records are saved.
        flush(BARRIER);
        if (python != null) {
            call(HOOK, "before_barrier", checkpointId);
        }
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    @Override
    public void close() throws Exception {
        // Flink closes the operator also when its task fails or is cancelled, and PyFlink's
        // close() then only closes the interpreter (the function's close() runs at the end of
        // input): told here, the function stops its runs instead of letting their model
        // calls go on after the task has ended.
        if (python != null) {
            try {
                call(HOOK, "task_closed");
            } catch (Exception | LinkageError e) {
                warnOnce(
                        "closed",
                        "flink-agents: the function was not told that its task ended (runs in"
                                + " flight go on until they finish)",
                        e);
            }
        }
        python = null;
        super.close();
    }

    @Override
    public <T> AbstractEmbeddedDataStreamPythonFunctionOperator<T> copy(
            DataStreamPythonFunctionInfo pythonFunctionInfo, TypeInformation<T> outputTypeInfo) {
        return new AgentKeyedProcessOperator<>(config, pythonFunctionInfo, inputType, outputTypeInfo);
    }
}
