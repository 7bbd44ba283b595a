package org.flinkagents.bridge;

/**
 * A chat model connection implemented in Java.
 *
 * <p>Contract across the boundary (all JSON strings):
 *
 * <ul>
 *   <li>messages: a JSON array of {@code {"role": "system|user|assistant|tool", "content": str,
 *       "tool_calls": [...], "extra_args": {...}}}; a tool message carries {@code
 *       extra_args.tool_call_id} and {@code extra_args.name}.
 *   <li>tools: a JSON array of OpenAI-style tool entries {@code {"type":"function","function":
 *       {"name":..., "description":..., "parameters": {schema}}}} (an empty array for none).
 *   <li>options: a JSON object (model name, temperature... from the chat model setup).
 *   <li>result: one assistant message {@code {"role":"assistant","content":str,
 *       "tool_calls":[{"id":str,"type":"function","function":{"name":str,"arguments":{...}}}],
 *       "extra_args":{...}}}; {@code tool_calls} and {@code extra_args} are optional.
 * </ul>
 */
public interface JavaChatModel extends JavaResource {

    /**
     * Sends the conversation to the model.
     *
     * @param messagesJson the conversation
     * @param toolsJson the tools the model may call
     * @param optionsJson per-call options
     * @return the assistant's reply
     * @throws Exception on failure; the exception class and message reach Python
     */
    String chat(String messagesJson, String toolsJson, String optionsJson) throws Exception;
}
