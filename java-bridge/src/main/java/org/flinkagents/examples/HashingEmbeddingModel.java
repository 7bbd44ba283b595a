package org.flinkagents.examples;

import java.util.ArrayList;
import java.util.List;
import org.flinkagents.bridge.JavaEmbeddingModel;
import org.flinkagents.bridge.Json;

/**
 * A deterministic toy embedding: character bigrams hashed into {@code dimension} buckets
 * (configuration, default 8), L2-normalized. Equal texts get equal vectors.
 */
public class HashingEmbeddingModel extends ExampleResource implements JavaEmbeddingModel {

    @Override
    public String embed(String textsJson, String optionsJson) {
        int dimension = Integer.parseInt(configString("dimension", "8"));
        List<Object> vectors = new ArrayList<>();
        for (Object text : Json.parseArray(textsJson)) {
            String s = String.valueOf(text);
            double[] v = new double[dimension];
            for (int i = 0; i + 1 < s.length() || (i == 0 && s.length() == 1); i++) {
                String gram = s.substring(i, Math.min(s.length(), i + 2));
                v[Math.floorMod(gram.hashCode(), dimension)] += 1.0;
            }
            double norm = 0;
            for (double x : v) {
                norm += x * x;
            }
            norm = Math.sqrt(norm);
            List<Object> out = new ArrayList<>(dimension);
            for (double x : v) {
                out.add(norm == 0 ? 0.0 : x / norm);
            }
            vectors.add(out);
        }
        return Json.write(vectors);
    }
}
