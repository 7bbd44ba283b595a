package org.flinkagents.flink;

/**
 * The version of the contract between this jar's Flink operators and the Python package's entry
 * points ({@code flink_agents.runtime.flink.entry.CONTRACT_VERSION}): the names, arguments and
 * results of what the operators call in Python ({@code claim_barrier_hook}, {@code
 * lean_operation}, {@code before_barrier}, {@code batch_settings}, {@code process_batch}, {@code
 * process_element_list}), the barrier timer and the job parameters (job id, restored) of the
 * process-mode operator and the packed output format that {@link CarriedTimestampOperator}
 * reads.
 *
 * <p>Both sides check it: the client before it uses these operators (another version: PyFlink's
 * operators), the thread-mode operator before it calls into Python, and Python when the operator
 * calls it. Change it on both sides together.
 */
public final class Contract {

    /**
     * The contract version; {@code flink_agents.runtime.flink.entry.CONTRACT_VERSION}. 4: the
     * process-mode operator tells the function whether it was restored ({@link
     * AgentExternalKeyedProcessOperator#RESTORED_PARAMETER}).
     */
    public static final String VERSION = "4";

    private Contract() {}

    /** Prints {@link #VERSION} (for a test that compares it with the Python side). */
    public static void main(String[] args) {
        System.out.println(VERSION);
    }
}
