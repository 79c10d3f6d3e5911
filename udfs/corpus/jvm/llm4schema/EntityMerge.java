package llm4schema;

import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Entity-page rows of {@link EntityPageScan} to C-set tallies, in one streaming pass per partition.
 *
 * <p>Why on the JVM: an entity's C-set is the union of its tokens over all its rows (an IRI on
 * several pages, a page split across files); Spark's generic aggregates over arrays of strings
 * cost about ten CPU-seconds per million quads. Here the rows arrive partitioned and sorted by their
 * group h (see {@link EntityPageScan#hash}: a radix sort of one long, where sorting by the entity's
 * name cost as much as the merge), so one run of equal h holds all the rows of a page's blank nodes,
 * or of one IRI: its entities are merged in a few string operations and are gone from memory when
 * the next run starts (memory: one run's entities and their distinct pages, so a site-wide IRI on a
 * million pages holds a million URLs for a moment). A page's rows (one per block of its lines)
 * share its blank nodes' group, so distinct pages are counted here too, by runs. What leaves is
 * small: (C-set, page) pairs (deduplicated per page), and per-partition tallies that Spark sums:
 * instances per C-set, raw sets, dropped (reason, token) pairs, entity and page counts. Reject,
 * skip and file rows pass through, so the job needs no second pass over the scan.
 *
 * <p>Output rows: {@link #SCHEMA}. Kinds: {@code cset_page} (k1 C-set key, k2 page URL, k3 its
 * domain, h the sort key of {@link CsetPages}), {@code instances} (k1 C-set key, n entities, h the
 * C-set's bits of that key), {@code raw} (k1 raw key before cleaning, n), {@code dropped} (k1
 * "reason\ttoken", n entities), {@code count} (k1 a counter name, n), and the scan's
 * {@code reject}, {@code skip}, {@code file} and {@code damage} rows (k1 the file). A key is the
 * sorted tokens joined by "\n".
 */
public final class EntityMerge implements MapPartitionsFunction<Row, Row>, Serializable {
    private static final long serialVersionUID = 1L;

    public static final StructType SCHEMA = new StructType()
            .add("kind", DataTypes.StringType, false)
            .add("k1", DataTypes.StringType, false)
            .add("k2", DataTypes.StringType, false)
            .add("k3", DataTypes.StringType, false)
            .add("n", DataTypes.LongType, false)
            .add("line_no", DataTypes.LongType, true)
            .add("raw", DataTypes.StringType, true)
            .add("h", DataTypes.LongType, false);  // cset_page, instances: CsetPages' sort key; others 0

    /** Entry point from Python: the scan's rows, partitioned and sorted by their group h, merged. */
    public static Dataset<Row> merge(Dataset<Row> scanned, int partitions) {
        Dataset<Row> sorted = scanned
                .repartition(partitions, functions.col("h"))
                .sortWithinPartitions("h");
        return sorted.mapPartitions(new EntityMerge(), Encoders.row(SCHEMA));
    }

    @Override
    public Iterator<Row> call(Iterator<Row> input) {
        return new Merger(input);
    }

    /** A union of token sets given as sorted, joined strings; usually all of them are equal. */
    private static final class TokenUnion {
        private String first;
        private TreeSet<String> all;

        void add(String tokens) {
            if (first == null) {
                first = tokens;
            } else if (all != null || !tokens.equals(first)) {
                if (all == null) {
                    all = new TreeSet<>(EntityPageScan::compareCodePoints);
                    split(first);
                }
                split(tokens);
            }
        }

        private void split(String tokens) {
            if (!tokens.isEmpty()) all.addAll(List.of(tokens.split(EntityPageScan.SEP)));
        }

        String joined() {
            return all == null ? first : String.join(EntityPageScan.SEP, all);
        }
    }

    /** One entity of the current run: its rows, distinct pages and token sets so far. */
    private static final class Entity {
        long rows;
        LinkedHashSet<String> pages = new LinkedHashSet<>();
        final TokenUnion kept = new TokenUnion(), drops = new TokenUnion();
    }

    private static final class Merger implements Iterator<Row> {
        private final Iterator<Row> input;
        private final ArrayDeque<Row> out = new ArrayDeque<>();
        private final Map<String, long[]> instances = new HashMap<>();
        private final Map<String, long[]> rawSets = new HashMap<>();
        private final Map<String, long[]> droppedTokens = new HashMap<>();
        private final HashSet<String> pageKeys = new HashSet<>();  // keys already sent for lastPage
        private String lastPage, lastDomain;
        private long lastPageBits;
        private long entities, entitiesKept, quadLines, entityPageRows, pages;
        // The page URLs of the current run of page rows (one page, unless page hashes collide).
        private final HashSet<String> pageRun = new HashSet<>();
        private long pageRunHash;
        // The run being merged: the entities of one group (h), usually one page's blank nodes or one IRI.
        private LinkedHashMap<String, Entity> run = new LinkedHashMap<>();
        private long runHash;
        private boolean finished;

        Merger(Iterator<Row> input) {
            this.input = input;
        }

        @Override
        public boolean hasNext() {
            while (out.isEmpty() && !finished) {
                if (input.hasNext()) {
                    Row r = input.next();
                    String kind = r.getString(0);
                    if ("page".equals(kind)) {
                        page(r);
                        continue;
                    }
                    if (!"quad".equals(kind)) {
                        passThrough(r);
                        continue;
                    }
                    long h = r.getLong(8);
                    if (h != runHash && !run.isEmpty()) endRun();
                    runHash = h;
                    String k1 = r.getString(1);
                    Entity e = run.get(k1);
                    if (e == null) {
                        e = new Entity();
                        run.put(k1, e);
                    }
                    add(e, r);
                } else {
                    endRun();
                    tallies();
                    finished = true;
                }
            }
            return !out.isEmpty();
        }

        @Override
        public Row next() {
            if (!hasNext()) throw new java.util.NoSuchElementException();
            return out.poll();
        }

        /** A page's rows all have its group h, so they are one run of the sort: count it once. */
        private void page(Row r) {
            long h = r.getLong(8);
            if (h != pageRunHash || pageRun.isEmpty()) {
                pageRun.clear();
                pageRunHash = h;
            }
            if (pageRun.add(r.getString(1))) pages++;
        }

        private void passThrough(Row r) {
            Long lineNo = r.isNullAt(6) ? null : r.getLong(6);
            out.add(RowFactory.create(r.getString(0), r.getString(1), "", "", r.getLong(3), lineNo,
                    r.isNullAt(7) ? null : r.getString(7), 0L));
        }

        private void add(Entity e, Row r) {
            e.rows++;
            quadLines += r.getLong(3);
            e.pages.add(r.getString(2));
            e.kept.add(r.getString(4));
            e.drops.add(r.getString(5));
        }

        private void endRun() {
            for (Map.Entry<String, Entity> en : run.entrySet()) endEntity(en.getValue());
            // clear() keeps the table a large run grew, and walks all of it at every later run.
            if (run.size() > 16) run = new LinkedHashMap<>();
            else run.clear();
        }

        private void endEntity(Entity e) {
            String key = e.kept.joined(), dropped = e.drops.joined();
            entities++;
            entityPageRows += e.rows;
            if (!key.isEmpty()) {
                entitiesKept++;
                instances.computeIfAbsent(key, k -> new long[1])[0]++;
            }
            if (!dropped.isEmpty()) {
                TreeSet<String> raw = new TreeSet<>(EntityPageScan::compareCodePoints);
                if (!key.isEmpty()) raw.addAll(List.of(key.split(EntityPageScan.SEP)));
                for (String d : dropped.split(EntityPageScan.SEP)) {
                    droppedTokens.computeIfAbsent(d, k -> new long[1])[0]++;
                    raw.add(d.substring(d.indexOf('\t') + 1));
                }
                rawSets.computeIfAbsent(String.join(EntityPageScan.SEP, raw), k -> new long[1])[0]++;
            } else {
                rawSets.computeIfAbsent(key, k -> new long[1])[0]++;
            }
            // A run is usually one page's blank nodes, so remembering the last page's keys removes
            // most repeated (C-set, page) rows.
            if (!key.isEmpty()) {
                long keyBits = CsetPages.keyBits(key);
                for (String page : e.pages) {
                    if (!page.equals(lastPage)) {
                        lastPage = page;
                        lastDomain = CsetPages.domain(page);
                        lastPageBits = CsetPages.pageBits(lastDomain, page);
                        pageKeys.clear();
                    }
                    if (pageKeys.add(key)) {
                        out.add(RowFactory.create("cset_page", key, page, lastDomain, 1L, null, null, keyBits | lastPageBits));
                    }
                }
            }
        }

        private void tallies() {
            for (Map.Entry<String, long[]> e : instances.entrySet()) {
                String key = e.getKey();
                out.add(RowFactory.create("instances", key, "", "", e.getValue()[0], null, null, CsetPages.keyBits(key)));
            }
            instances.clear();
            emit("raw", rawSets);
            emit("dropped", droppedTokens);
            count("entities", entities);
            count("entities_kept", entitiesKept);
            count("quad_lines", quadLines);
            count("entity_page_rows", entityPageRows);
            count("pages", pages);
        }

        private void emit(String kind, Map<String, long[]> m) {
            for (Map.Entry<String, long[]> e : m.entrySet()) {
                out.add(RowFactory.create(kind, e.getKey(), "", "", e.getValue()[0], null, null, 0L));
            }
            m.clear();
        }

        private void count(String name, long n) {
            out.add(RowFactory.create("count", name, "", "", n, null, null, 0L));
        }
    }
}
