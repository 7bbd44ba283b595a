package org.flinkagents.bridge;

/**
 * An embedding model connection implemented in Java.
 *
 * <p>Contract: {@link #embed(String, String)} takes a JSON array of strings and a JSON object of
 * options and returns a JSON array with one array of numbers per text.
 */
public interface JavaEmbeddingModel extends JavaResource {

    /**
     * Embeds texts.
     *
     * @param textsJson a JSON array of strings
     * @param optionsJson a JSON object of options (model name...)
     * @return a JSON array of vectors, one per text
     * @throws Exception on failure; the exception class and message reach Python
     */
    String embed(String textsJson, String optionsJson) throws Exception;
}
