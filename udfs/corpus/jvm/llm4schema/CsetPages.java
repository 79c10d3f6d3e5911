package llm4schema;

import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;

import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The merge's rows to the job's tallies: one {@code cset} row per C-set (instances, distinct pages,
 * distinct domains and a sample of K page URLs) from its {@code instances} and (C-set, domain,
 * page) rows; every other row passes through. The tallies are small (a row per C-set, per file,
 * per rejected line, per partition's counter): the job keeps them for its writers, and the
 * (C-set, page) rows, about one per entity, are never stored.
 *
 * <p>Each row carries a sort key h: 20 bits of its C-set's hash, then 20 of its domain's, then 24
 * of its URL's ({@link EntityMerge} writes it; an {@code instances} row has the C-set's bits and
 * zeros). The rows arrive partitioned by the C-set bits and sorted by h alone, a radix sort of one long (sorting by the strings themselves cost more than the
 * pass). So a C-set's rows are one run, a domain's rows one run inside it and a page's rows one run
 * inside that: both distinct numbers are counted by counting runs, with memory bounded by K
 * whatever the C-set's size. Hashes that collide only put two C-sets, domains or pages in one run,
 * where they are told apart by name: the counts are exact. The sample is the K pages of smallest
 * (hash, URL): spread over the C-set's pages and independent of partitioning, so reruns and
 * clusters draw the same URLs.
 */
public final class CsetPages implements MapPartitionsFunction<Row, Row>, Serializable {
    private static final long serialVersionUID = 1L;

    /** The tallies: the merge's kinds but cset_page and instances, and {@code cset} (k1 the C-set
     * key, n its instances, and the three columns after raw). */
    public static final StructType SCHEMA = new StructType()
            .add("kind", DataTypes.StringType, false)
            .add("k1", DataTypes.StringType, false)
            .add("n", DataTypes.LongType, false)
            .add("line_no", DataTypes.LongType, true)
            .add("raw", DataTypes.StringType, true)
            .add("n_pages", DataTypes.LongType, false)
            .add("n_domains", DataTypes.LongType, false)
            .add("sample_urls", DataTypes.createArrayType(DataTypes.StringType, false), true);

    private final int k;

    CsetPages(int k) {
        this.k = k;
    }

    /** Entry point from Python: the rows of {@link EntityMerge}; a C-set's rows go to one partition. */
    public static Dataset<Row> tallies(Dataset<Row> merged, int partitions, int k) {
        Column kind = functions.col("kind");
        Column part = functions.when(kind.isin("cset_page", "instances"), functions.shiftRight(functions.col("h"), 44))
                .otherwise(functions.hash(functions.col("k1")));
        return merged.repartition(partitions, part)
                .sortWithinPartitions("h")
                .mapPartitions(new CsetPages(k), Encoders.row(SCHEMA));
    }

    /** Host of a page URL, lower-cased, without a leading {@code www.}, port and user info; "" when none. */
    public static String domain(String url) {
        if (url.startsWith("_:")) return "";  // a blank graph label (with its file): no host
        int s = url.indexOf("://");
        if (s < 0) return "";
        int start = s + 3, end = start;
        while (end < url.length() && "/?#".indexOf(url.charAt(end)) < 0) end++;
        String host = url.substring(start, end);
        int at = host.lastIndexOf('@');
        if (at >= 0) host = host.substring(at + 1);
        if (host.startsWith("[")) {  // an IPv6 literal keeps its colons
            int close = host.indexOf(']');
            host = close > 0 ? host.substring(1, close) : host.substring(1);
        } else {
            int colon = host.indexOf(':');
            if (colon >= 0) host = host.substring(0, colon);
        }
        host = host.toLowerCase(Locale.ROOT);
        return host.startsWith("www.") ? host.substring(4) : host;
    }

    /** The C-set's 20 bits of a cset_page row's sort key h: the top bits, so a C-set's rows are one run. */
    static long keyBits(String key) {
        return (EntityPageScan.group(key) >>> 44) << 44;
    }

    /** The page's 44 bits of h: 20 of its domain above 24 of its URL, so a domain's pages are one run. */
    static long pageBits(String domain, String page) {
        return ((EntityPageScan.group(domain) >>> 44) << 24) | (EntityPageScan.group(page) >>> 40);
    }

    private static final class Sampled {
        final long h;
        final String url;

        Sampled(long h, String url) {
            this.h = h;
            this.url = url;
        }

        static int order(Sampled a, Sampled b) {
            int c = Long.compare(a.h, b.h);
            return c != 0 ? c : a.url.compareTo(b.url);
        }
    }

    /** One C-set of the current run: instances, distinct pages and domains so far, and its sample. */
    private final class Stat {
        final String key;
        long instances, pages, domains;
        final PriorityQueue<Sampled> sample = new PriorityQueue<>(Math.max(k, 1), (a, b) -> Sampled.order(b, a));
        // The runs of h this C-set is in, the first domain and page seen in each, and (only when
        // hashes collide) the others: every page is counted once, in the one run it can be in.
        long pageRun, domainRun;
        String page, domain;
        HashSet<String> otherPages, otherDomains;

        Stat(String key) {
            this.key = key;
        }

        void add(long h, String d, String u) {
            if (page == null) {  // the C-set's first page
                domainRun = h >>> 24;
                domain = d;
                domains = 1;
                pageRun = h;
                page = u;
                newPage(u);
                return;
            }
            if (domainRun != h >>> 24) {
                domainRun = h >>> 24;
                domain = d;
                otherDomains = null;
                domains++;
            } else if (!d.equals(domain)) {
                if (otherDomains == null) otherDomains = new HashSet<>();
                if (otherDomains.add(d)) domains++;
            }
            if (pageRun != h) {
                pageRun = h;
                page = u;
                otherPages = null;
                newPage(u);
            } else if (!u.equals(page)) {
                if (otherPages == null) otherPages = new HashSet<>();
                if (otherPages.add(u)) newPage(u);
            }
        }

        private void newPage(String u) {
            pages++;
            if (k == 0) return;
            Sampled s = new Sampled(EntityPageScan.hash(u), u);
            if (sample.size() < k) sample.add(s);
            else if (Sampled.order(s, sample.peek()) < 0) {
                sample.poll();
                sample.add(s);
            }
        }

        Row row() {
            List<Sampled> chosen = new ArrayList<>(sample);
            chosen.sort(Sampled::order);
            String[] urls = new String[chosen.size()];
            for (int i = 0; i < urls.length; i++) urls[i] = chosen.get(i).url;
            return RowFactory.create("cset", key, instances, null, null, pages, domains, urls);
        }
    }

    @Override
    public Iterator<Row> call(Iterator<Row> input) {
        return new Iterator<Row>() {
            // The C-sets of the current run of equal key bits (one, unless two C-sets share them).
            private final LinkedHashMap<String, Stat> run = new LinkedHashMap<>();
            private final ArrayDeque<Row> out = new ArrayDeque<>();
            private long runBits;

            @Override
            public boolean hasNext() {
                while (out.isEmpty() && input.hasNext()) {
                    Row r = input.next();
                    String kind = r.getString(0);
                    boolean pair = "cset_page".equals(kind);
                    if (!pair && !"instances".equals(kind)) {
                        out.add(RowFactory.create(kind, r.getString(1), r.getLong(4), r.isNullAt(5) ? null : r.getLong(5),
                                r.isNullAt(6) ? null : r.getString(6), 0L, 0L, null));
                        continue;
                    }
                    String key = r.getString(1);
                    long h = r.getLong(7);
                    if (h >>> 44 != runBits) endRun();
                    runBits = h >>> 44;
                    Stat s = run.computeIfAbsent(key, Stat::new);
                    if (pair) s.add(h, r.getString(3), r.getString(2));
                    else s.instances += r.getLong(4);
                }
                if (out.isEmpty()) endRun();
                return !out.isEmpty();
            }

            private void endRun() {
                for (Stat s : run.values()) out.add(s.row());
                run.clear();
            }

            @Override
            public Row next() {
                if (!hasNext()) throw new java.util.NoSuchElementException();
                return out.poll();
            }
        };
    }
}
