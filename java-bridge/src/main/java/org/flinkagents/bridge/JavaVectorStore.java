package org.flinkagents.bridge;

/**
 * A vector store implemented in Java, used from Python agents through {@code
 * flink_agents.api.vector_stores.java_vector_store.JavaVectorStore}.
 *
 * <p>Texts are embedded on the Python side (the store's {@code embedding_model}): every document
 * and query that reaches Java carries its vector. Documents cross as JSON objects {@code {"id":
 * ..., "content": ..., "metadata": {...}, "embedding": [...]}}; a query's results carry a {@code
 * "score"} (higher is closer). Filters are the metadata filter language of the Python stores
 * (equality shorthand {@code {"field": value}}, operators {@code $eq $ne $gt $gte $lt $lte $in
 * $nin $and $or}) as a JSON object, or {@code null}; the Python side checks every result against
 * the filter again, so a store may filter loosely (or not at all) and stay correct.
 *
 * <p>A {@code collection} argument is never null: the Python side resolves the default.
 */
public interface JavaVectorStore extends JavaResource {

    /**
     * Stores documents (all with vectors); a document whose id exists replaces it.
     *
     * @param documentsJson a JSON array of documents, each with an id
     * @param collection the collection
     * @return a JSON array of the ids, in order
     * @throws Exception on failure; the class and message reach Python
     */
    String add(String documentsJson, String collection) throws Exception;

    /**
     * The documents closest to a vector, best first, with their scores.
     *
     * @param embeddingJson the query vector, a JSON array of numbers
     * @param limit how many documents at most
     * @param collection the collection
     * @param filtersJson the metadata filter (JSON object) or {@code null}
     * @return a JSON array of documents with {@code "score"}
     * @throws Exception on failure
     */
    String query(String embeddingJson, int limit, String collection, String filtersJson)
            throws Exception;

    /**
     * Stored documents: those with the given ids (in that order, unknown ids skipped), or up to
     * {@code limit} (negative: all) matching the filter.
     *
     * @param idsJson a JSON array of ids, or {@code null} for any
     * @param collection the collection
     * @param filtersJson the metadata filter or {@code null}
     * @param limit at most this many when {@code idsJson} is null; negative for all
     * @return a JSON array of documents (without vectors)
     * @throws Exception on failure
     */
    String get(String idsJson, String collection, String filtersJson, int limit)
            throws Exception;

    /**
     * Removes documents by id and/or filter; with neither, every document of the collection.
     *
     * @param idsJson a JSON array of ids, or {@code null}
     * @param collection the collection
     * @param filtersJson the metadata filter or {@code null}
     * @throws Exception on failure
     */
    void delete(String idsJson, String collection, String filtersJson) throws Exception;

    /**
     * Replaces stored documents (matched by id); a document without {@code "embedding"} keeps
     * its stored vector; an unknown id is an error.
     *
     * @param documentsJson a JSON array of documents
     * @param collection the collection
     * @throws Exception on failure (an unknown id included)
     */
    void update(String documentsJson, String collection) throws Exception;

    /**
     * The collections, for stores that manage them.
     *
     * @return a JSON array of names
     * @throws Exception if the store has no collections to list
     */
    default String listCollections() throws Exception {
        throw new UnsupportedOperationException(getClass().getName() + " cannot list collections");
    }

    /**
     * Creates a collection unless it exists.
     *
     * @param name the collection
     * @throws Exception if the store cannot create collections
     */
    default void createCollection(String name) throws Exception {
        throw new UnsupportedOperationException(
                getClass().getName() + " cannot create collections");
    }

    /**
     * Deletes a collection and its documents (an unknown name is an error).
     *
     * @param name the collection
     * @throws Exception if the store cannot delete collections, or there is no such collection
     */
    default void deleteCollection(String name) throws Exception {
        throw new UnsupportedOperationException(
                getClass().getName() + " cannot delete collections");
    }
}
