package org.flinkagents.examples;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.flinkagents.bridge.JavaVectorStore;
import org.flinkagents.bridge.Json;

/**
 * An example Java vector store: documents in memory (per instance, one per task slot), ranked
 * by cosine similarity, with collections and the metadata filter language (equality, {@code $eq
 * $ne $gt $gte $lt $lte $in $nin $and $or}).
 *
 * <p>Configuration: {@code documents} (a JSON array of documents with vectors, loaded into the
 * {@code default_collection} on open), {@code default_collection} (default {@code "default"}),
 * plus the lifecycle keys of {@link ExampleResource}.
 */
public class InMemoryJavaVectorStore extends ExampleResource implements JavaVectorStore {

    private final Map<String, Map<String, Map<String, Object>>> collections =
            new ConcurrentHashMap<>();

    @Override
    public void open(String configJson) throws Exception {
        super.open(configJson);
        Object documents = config.get("documents");
        if (documents instanceof List) {
            add(Json.write(documents), configString("default_collection", "default"));
        }
    }

    private synchronized Map<String, Map<String, Object>> collection(String name, boolean create) {
        Map<String, Map<String, Object>> found = collections.get(name);
        if (found == null) {
            if (!create) {
                throw new IllegalArgumentException(
                        "collection '" + name + "' does not exist (collections: "
                                + new TreeSet<>(collections.keySet()) + ")");
            }
            found = new LinkedHashMap<>();
            collections.put(name, found);
        }
        return found;
    }

    @Override
    public synchronized String add(String documentsJson, String collection) {
        Map<String, Map<String, Object>> docs = collection(collection, true);
        List<Object> ids = new ArrayList<>();
        for (Object item : Json.parseArray(documentsJson)) {
            @SuppressWarnings("unchecked")
            Map<String, Object> doc = new LinkedHashMap<>((Map<String, Object>) item);
            if (!(doc.get("embedding") instanceof List)) {
                throw new IllegalArgumentException("document " + doc.get("id") + " has no vector");
            }
            String id = String.valueOf(doc.get("id"));
            docs.remove(id);
            docs.put(id, doc);
            ids.add(id);
        }
        return Json.write(ids);
    }

    @Override
    public synchronized String query(
            String embeddingJson, int limit, String collection, String filtersJson) {
        List<Object> query = Json.parseArray(embeddingJson);
        Object filter = filtersJson == null ? null : Json.parse(filtersJson);
        List<Map<String, Object>> scored = new ArrayList<>();
        for (Map<String, Object> doc : collection(collection, true).values()) {
            if (!matches(filter, metadata(doc))) {
                continue;
            }
            Map<String, Object> hit = withoutVector(doc);
            hit.put("score", cosine(query, (List<?>) doc.get("embedding")));
            scored.add(hit);
        }
        scored.sort(Comparator.comparingDouble(d -> -((Double) d.get("score"))));
        return Json.write(scored.subList(0, Math.max(0, Math.min(limit, scored.size()))));
    }

    @Override
    public synchronized String get(String idsJson, String collection, String filtersJson, int limit) {
        Map<String, Map<String, Object>> docs = collection(collection, false);
        Object filter = filtersJson == null ? null : Json.parse(filtersJson);
        List<Object> out = new ArrayList<>();
        if (idsJson != null) {
            for (Object id : Json.parseArray(idsJson)) {
                Map<String, Object> doc = docs.get(String.valueOf(id));
                if (doc != null && matches(filter, metadata(doc))) {
                    out.add(withoutVector(doc));
                }
            }
            return Json.write(out);
        }
        for (Map<String, Object> doc : docs.values()) {
            if (limit >= 0 && out.size() >= limit) {
                break;
            }
            if (matches(filter, metadata(doc))) {
                out.add(withoutVector(doc));
            }
        }
        return Json.write(out);
    }

    @Override
    public synchronized void delete(String idsJson, String collection, String filtersJson) {
        Map<String, Map<String, Object>> docs = collection(collection, false);
        Object filter = filtersJson == null ? null : Json.parse(filtersJson);
        List<Object> ids = idsJson == null ? null : Json.parseArray(idsJson);
        docs.entrySet()
                .removeIf(
                        e ->
                                (ids == null || ids.contains(e.getKey()))
                                        && matches(filter, metadata(e.getValue())));
    }

    @Override
    public synchronized void update(String documentsJson, String collection) {
        Map<String, Map<String, Object>> docs = collection(collection, false);
        List<Object> updates = Json.parseArray(documentsJson);
        List<String> missing = new ArrayList<>();
        for (Object item : updates) {
            String id = String.valueOf(((Map<?, ?>) item).get("id"));
            if (!docs.containsKey(id)) {
                missing.add(id);
            }
        }
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException(
                    "cannot update " + missing + ": not in collection '" + collection + "'");
        }
        for (Object item : updates) {
            @SuppressWarnings("unchecked")
            Map<String, Object> doc = new LinkedHashMap<>((Map<String, Object>) item);
            String id = String.valueOf(doc.get("id"));
            if (!(doc.get("embedding") instanceof List)) {
                doc.put("embedding", docs.get(id).get("embedding"));
            }
            docs.put(id, doc);
        }
    }

    @Override
    public synchronized String listCollections() {
        return Json.write(new ArrayList<Object>(new TreeSet<>(collections.keySet())));
    }

    @Override
    public synchronized void createCollection(String name) {
        collection(name, true);
    }

    @Override
    public synchronized void deleteCollection(String name) {
        collection(name, false);
        collections.remove(name);
    }

    private static Map<String, Object> withoutVector(Map<String, Object> doc) {
        Map<String, Object> copy = new LinkedHashMap<>(doc);
        copy.remove("embedding");
        return copy;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> metadata(Map<String, Object> doc) {
        Object metadata = doc.get("metadata");
        return metadata instanceof Map ? (Map<String, Object>) metadata : new LinkedHashMap<>();
    }

    private static double cosine(List<?> a, List<?> b) {
        if (a.size() != b.size()) {
            throw new IllegalArgumentException(
                    "the query vector has " + a.size() + " dimensions, the stored ones "
                            + b.size() + " (the same embedding model for both?)");
        }
        double dot = 0;
        double na = 0;
        double nb = 0;
        for (int i = 0; i < a.size(); i++) {
            double x = ((Number) a.get(i)).doubleValue();
            double y = ((Number) b.get(i)).doubleValue();
            dot += x * y;
            na += x * x;
            nb += y * y;
        }
        return na == 0 || nb == 0 ? 0.0 : dot / Math.sqrt(na * nb);
    }

    /** Whether metadata passes a filter of the Python stores' language (null: all do). */
    static boolean matches(Object filter, Map<String, Object> metadata) {
        if (!(filter instanceof Map)) {
            return true;
        }
        for (Map.Entry<?, ?> part : ((Map<?, ?>) filter).entrySet()) {
            String key = String.valueOf(part.getKey());
            Object value = part.getValue();
            boolean ok;
            if (key.equals("$and") || key.equals("$or")) {
                List<?> parts = (List<?>) value;
                ok = key.equals("$and");
                for (Object p : parts) {
                    boolean m = matches(p, metadata);
                    ok = key.equals("$and") ? ok && m : ok || m;
                }
            } else if (value instanceof Map) {
                ok = true;
                for (Map.Entry<?, ?> op : ((Map<?, ?>) value).entrySet()) {
                    ok = ok && holds(String.valueOf(op.getKey()), metadata.get(key), op.getValue());
                }
            } else {
                ok = holds("$eq", metadata.get(key), value);
            }
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    private static boolean same(Object stored, Object wanted) {
        if (stored instanceof Number && wanted instanceof Number) {
            return ((Number) stored).doubleValue() == ((Number) wanted).doubleValue();
        }
        return stored != null && stored.equals(wanted);
    }

    private static boolean holds(String op, Object stored, Object wanted) {
        switch (op) {
            case "$eq":
                return same(stored, wanted);
            case "$ne":
                return !same(stored, wanted);
            case "$in":
            case "$nin":
                boolean any = false;
                for (Object w : (List<?>) wanted) {
                    any = any || same(stored, w);
                }
                return op.equals("$in") == any;
            default:
                if (!(stored instanceof Number) || !(wanted instanceof Number)) {
                    return false;
                }
                double s = ((Number) stored).doubleValue();
                double w = ((Number) wanted).doubleValue();
                switch (op) {
                    case "$gt":
                        return s > w;
                    case "$gte":
                        return s >= w;
                    case "$lt":
                        return s < w;
                    case "$lte":
                        return s <= w;
                    default:
                        throw new IllegalArgumentException("unknown filter operator " + op);
                }
        }
    }
}
