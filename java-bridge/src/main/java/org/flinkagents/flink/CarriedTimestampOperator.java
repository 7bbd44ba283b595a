package org.flinkagents.flink;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Follows the agent operator: unwraps its {@code (timestamp, pickled output)} pairs and gives each
 * output its input's timestamp.
 *
 * <p>The agent's Python function emits outputs of runs that waited (on a model, a tool) from
 * timers: a processing-time timer erases the record's timestamp and the end-of-input drain timer
 * stamps it with 2^62, so a downstream event-time window would drop it as late. The function sends
 * the input's timestamp along; this operator puts it back. Doing it here, in Java and chained to
 * the agent, replaces a Python timestamp assigner and a Python map (two more Python calls per
 * record).
 *
 * <p>Timestamp codes in {@code f0}: {@link #KEEP} (the output was emitted while its input was
 * processed, so the record already has the input's timestamp), {@link #NONE} (the input had no
 * timestamp), else the timestamp to set.
 *
 * <p>Watermarks: like a {@code WatermarkStrategy.noWatermarks()} assigner, only the final
 * watermark ({@code Long.MAX_VALUE}, end of a bounded input) is forwarded; upstream watermarks
 * could overtake outputs still being computed, which would then be late.
 *
 * <p>With {@code carry == false} it only unwraps: records keep the timestamps Flink gave them and
 * every watermark is forwarded.
 */
public final class CarriedTimestampOperator extends AbstractStreamOperator<byte[]>
        implements OneInputStreamOperator<Tuple2<Long, byte[]>, byte[]> {

    private static final long serialVersionUID = 1L;

    /** The record already carries its input's timestamp. */
    public static final long KEEP = Long.MIN_VALUE;

    /** The input had no timestamp. */
    public static final long NONE = Long.MIN_VALUE + 1;

    private final boolean carry;

    private transient StreamRecord<byte[]> out;

    /**
     * @param carry put the carried timestamps back and forward only the final watermark; false:
     *     unwrap only
     */
    public CarriedTimestampOperator(boolean carry) {
        this.carry = carry;
    }

    @Override
    public void open() throws Exception {
        super.open();
        out = new StreamRecord<>(null);
    }

    @Override
    public void processElement(StreamRecord<Tuple2<Long, byte[]>> element) throws Exception {
        Tuple2<Long, byte[]> pair = element.getValue();
        long ts = carry ? pair.f0 : KEEP;
        if (ts == KEEP) {
            // Python operators upstream mark "no timestamp" as Long.MIN_VALUE.
            if (element.hasTimestamp() && element.getTimestamp() != Long.MIN_VALUE) {
                out.replace(pair.f1, element.getTimestamp());
            } else {
                out.replace(pair.f1);
                out.eraseTimestamp();
            }
        } else if (ts == NONE) {
            out.replace(pair.f1);
            out.eraseTimestamp();
        } else {
            out.replace(pair.f1, ts);
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
