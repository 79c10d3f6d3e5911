package llm4schema;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;

import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * (C-set, domain, page) rows to one row per C-set: distinct pages, distinct domains and a sample
 * of K page URLs.
 *
 * <p>The rows arrive hash-partitioned by C-set and sorted by (C-set, domain, page), so one pass
 * counts both distinct numbers by counting changes, with memory bounded by K whatever the C-set's
 * size (Spark's count-distinct and a bottom-K aggregate cost about 1.5 CPU-seconds per million
 * quads here). The sample is the K pages of smallest (hash, URL): spread over the C-set's pages
 * and independent of partitioning, so reruns and clusters draw the same URLs.
 */
public final class CsetPages implements MapPartitionsFunction<Row, Row>, Serializable {
    private static final long serialVersionUID = 1L;

    public static final StructType SCHEMA = new StructType()
            .add("key", DataTypes.StringType, false)
            .add("n_pages", DataTypes.LongType, false)
            .add("n_domains", DataTypes.LongType, false)
            .add("sample_urls", DataTypes.createArrayType(DataTypes.StringType, false), false);

    private final int k;

    CsetPages(int k) {
        this.k = k;
    }

    /** Entry point from Python: rows (key, domain, page_url), not necessarily distinct. */
    public static Dataset<Row> stats(Dataset<Row> pages, int partitions, int k) {
        return pages.repartition(partitions, functions.col("key"))
                .sortWithinPartitions("key", "domain", "page_url")
                .mapPartitions(new CsetPages(k), Encoders.row(SCHEMA));
    }

    /** Host of a page URL, lower-cased, without a leading {@code www.}, port and user info; "" when none. */
    public static String domain(String url) {
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

    /** A 64-bit hash of a URL (FNV-1a over its UTF-16 units, then MurmurHash3's finaliser). */
    static long hash(String s) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0; i < s.length(); i++) {
            h ^= s.charAt(i);
            h *= 0x100000001b3L;
        }
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
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

    @Override
    public Iterator<Row> call(Iterator<Row> input) {
        return new Iterator<Row>() {
            private Row pending;   // the first row of the next C-set
            private boolean started;

            @Override
            public boolean hasNext() {
                if (!started) {
                    started = true;
                    pending = input.hasNext() ? input.next() : null;
                }
                return pending != null;
            }

            @Override
            public Row next() {
                if (!hasNext()) throw new java.util.NoSuchElementException();
                String key = pending.getString(0);
                String domain = null, page = null;
                long pages = 0, domains = 0;
                // The K smallest so far, largest on top.
                PriorityQueue<Sampled> sample = new PriorityQueue<>(Math.max(k, 1), (a, b) -> Sampled.order(b, a));
                Row r = pending;
                while (r != null && r.getString(0).equals(key)) {
                    String d = r.getString(1), u = r.getString(2);
                    if (!d.equals(domain)) {
                        domains++;
                        domain = d;
                        page = null;
                    }
                    if (!u.equals(page)) {
                        pages++;
                        page = u;
                        if (k > 0) {
                            Sampled s = new Sampled(hash(u), u);
                            if (sample.size() < k) sample.add(s);
                            else if (Sampled.order(s, sample.peek()) < 0) {
                                sample.poll();
                                sample.add(s);
                            }
                        }
                    }
                    r = input.hasNext() ? input.next() : null;
                }
                pending = r;
                List<Sampled> chosen = new ArrayList<>(sample);
                chosen.sort(Sampled::order);
                String[] urls = new String[chosen.size()];
                for (int i = 0; i < urls.length; i++) urls[i] = chosen.get(i).url;
                return RowFactory.create(key, pages, domains, urls);
            }
        };
    }
}
