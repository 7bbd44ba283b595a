package org.flinkagents.flink;

import java.util.Arrays;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.typeinfo.python.PickledByteArrayTypeInfo;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.OutputTag;

/**
 * Follows the agent operator: unwraps its packed {@code (timestamp code, pickled output)} pairs
 * and gives each output its input's timestamp.
 *
 * <p>The agent's Python function emits outputs of runs that waited (on a model, a tool) from
 * timers: a processing-time timer erases the record's timestamp and the end-of-input drain timer
 * stamps it with 2^62, so a downstream event-time window would drop it as late. The function sends
 * the input's timestamp along; this operator puts it back. Doing it here, in Java and chained to
 * the agent, replaces a Python timestamp assigner and a Python map (two more Python calls per
 * record).
 *
 * <p>A packed pair ({@code flink_agents.runtime.flink.output.pack_output}, part of the {@link
 * Contract}) is the timestamp code as 8 bytes (big-endian, signed) followed by the pickled
 * output, which leaves this operator as the record (a PICKLED_BYTE_ARRAY value). One {@code
 * byte[]} crosses from Python per output, instead of a tuple converted field by field.
 *
 * <p>Timestamp codes: {@link #KEEP} (the output was emitted while its input was processed, so the
 * record already has the input's timestamp), {@link #NONE} (the input had no timestamp), {@link
 * #DEAD_LETTER} (not an output: a dead letter, a failed run set aside, which goes to the side output
 * {@link #DEAD_LETTERS}), else the timestamp to set.
 *
 * <p>Watermarks: like a {@code WatermarkStrategy.noWatermarks()} assigner, only the final
 * watermark ({@code Long.MAX_VALUE}, end of a bounded input) is forwarded; upstream watermarks
 * could overtake outputs still being computed, which would then be late.
 *
 * <p>With {@code carry == false} it only unwraps: records keep the timestamps Flink gave them and
 * every watermark is forwarded.
 */
public final class CarriedTimestampOperator extends AbstractStreamOperator<byte[]>
        implements OneInputStreamOperator<byte[], byte[]> {

    private static final long serialVersionUID = 1L;

    /** The record already carries its input's timestamp. */
    public static final long KEEP = Long.MIN_VALUE;

    /** The input had no timestamp. */
    public static final long NONE = Long.MIN_VALUE + 1;

    /** Not an output but a dead letter: it goes to the side output {@link #DEAD_LETTERS}. */
    public static final long DEAD_LETTER = Long.MIN_VALUE + 2;

    /** The side output of dead letters (pickled {@code DeadLetter} objects, no timestamp). */
    public static final OutputTag<byte[]> DEAD_LETTERS =
            new OutputTag<>(
                    "flink-agents-dead-letters", PickledByteArrayTypeInfo.PICKLED_BYTE_ARRAY_TYPE_INFO);

    /** Length of the timestamp code in front of the pickled output. */
    static final int HEAD = 8;

    private final boolean carry;

    private transient StreamRecord<byte[]> out;

    /**
     * @param carry put the carried timestamps back and forward only the final watermark; false:
     *     unwrap only
     */
    public CarriedTimestampOperator(boolean carry) {
        this.carry = carry;
    }

    private transient StreamRecord<byte[]> letter;

    @Override
    public void open() throws Exception {
        super.open();
        out = new StreamRecord<>(null);
        letter = new StreamRecord<>(null);
    }

    /** The timestamp code at the head of a packed pair. */
    static long code(byte[] packed) {
        if (packed.length < HEAD) {
            throw new IllegalArgumentException(
                    "a flink-agents output of " + packed.length + " bytes has no timestamp code");
        }
        long code = 0;
        for (int i = 0; i < HEAD; i++) {
            code = (code << 8) | (packed[i] & 0xFF);
        }
        return code;
    }

    @Override
    public void processElement(StreamRecord<byte[]> element) throws Exception {
        byte[] packed = element.getValue();
        long ts = code(packed);
        byte[] value = Arrays.copyOfRange(packed, HEAD, packed.length);
        if (ts == DEAD_LETTER) {
            letter.replace(value);
            output.collect(DEAD_LETTERS, letter);
            return;
        }
        if (!carry) {
            ts = KEEP;
        }
        if (ts == KEEP) {
            // Python operators upstream mark "no timestamp" as Long.MIN_VALUE.
            if (element.hasTimestamp() && element.getTimestamp() != Long.MIN_VALUE) {
                out.replace(value, element.getTimestamp());
            } else {
                out.replace(value);
                out.eraseTimestamp();
            }
        } else if (ts == NONE) {
            out.replace(value);
            out.eraseTimestamp();
        } else {
            out.replace(value, ts);
        }
        output.collect(out);
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        if (!carry || mark.getTimestamp() == Long.MAX_VALUE) {
            super.processWatermark(mark);
        }
    }
}
