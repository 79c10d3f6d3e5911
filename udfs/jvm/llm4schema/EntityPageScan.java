package llm4schema;

import java.io.Serializable;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * WebDataCommons N-Quads lines to entity-page rows, in one streaming pass per input file.
 *
 * <p>Why a hand-written scanner: a per-line regex plus a per-quad aggregation in Spark SQL cost
 * about 18 CPU-seconds per million quads; most of it is the regex engine and hashing every quad
 * through a generic aggregate. WDC writes the quads of a page together, so the entities of the
 * current page are collected in a small map and flushed when the page changes: memory is bounded
 * by one page. An entity on several pages (an IRI), or on a page whose lines are not contiguous,
 * has several rows: {@link EntityMerge} unites them.
 *
 * <p>Grammar (WDC's N-Quads variant): {@code S P O G [G2] .} with S and G an IRI or a blank node,
 * P an IRI, O an IRI, blank node or literal ({@code "..."} with escapes, then {@code @lang} or
 * {@code ^^<datatype>}); terms separated by spaces or tabs; a fifth term is accepted and ignored.
 * IRIs allow any character but controls, space, {@code <>"\} (real WDC IRIs carry
 * {@code {search_term_string}}), plus backslash-u escapes. A line with a U+FFFD replacement
 * character (what invalid UTF-8 becomes) is damaged. The reason a line is rejected is computed in
 * Spark SQL on the (few) rejected lines: see udfs/nquads.py.
 *
 * <p>Input: file paths, one per partition, read in order. Output rows: {@link #SCHEMA}.
 */
public final class EntityPageScan implements Serializable {
    private static final long serialVersionUID = 1L;
    static final String RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>";
    static final String[] EMPTY = new String[0];
    /** Joins the tokens of a set: newlines cannot occur in an N-Quads term (spaces can, in literals). */
    static final String SEP = "\n";

    public static final StructType SCHEMA = new StructType()
            .add("kind", DataTypes.StringType, false)       // quad | page | reject | skip | file | damage
            .add("k1", DataTypes.StringType, false)         // quad: entity; page: its URL; others: file
            .add("k2", DataTypes.StringType, false)         // quad: page URL; reject: line number
            .add("n_lines", DataTypes.LongType, false)      // lines this row stands for
            .add("kept", DataTypes.StringType, false)       // quad: kept tokens, sorted, joined by "\n"
            .add("dropped", DataTypes.StringType, false)    // quad: "reason\ttoken", sorted, joined by "\n"
            .add("line_no", DataTypes.LongType, true)       // reject: 1-based line in its file
            .add("raw", DataTypes.StringType, true)         // reject: the whole line; damage: why
            .add("h", DataTypes.LongType, false);           // the merge's group: see #group

    private final Set<String> classes;
    private final Set<String> properties;
    private final boolean clean;
    private final boolean pageScope;
    private final String[] reasons;  // type not schema, type unknown, property not schema, property unknown

    public EntityPageScan(Set<String> classes, Set<String> properties, boolean clean, boolean pageScope,
                          String[] reasons) {
        this.classes = classes;
        this.properties = properties;
        this.clean = clean;
        this.pageScope = pageScope;
        this.reasons = reasons;
    }

    /**
     * Entry point from Python: one task per input file, each read by a {@link LineReader}.
     * Newline-separated vocabularies and reasons keep the py4j call simple; the driver's Hadoop
     * configuration travels with the tasks, so what opens a file on the driver (local, HDFS, S3A)
     * opens it on an executor. With {@code ignoreCorrupt} a file that cannot be read to its end
     * keeps the lines read before the damage and gets a {@code damage} row with the reason;
     * without it the task fails with the file and the reason in the message.
     */
    public static Dataset<Row> scan(SparkSession spark, String[] files, String classes, String properties,
                                    boolean clean, boolean pageScope, String reasons, boolean ignoreCorrupt) {
        EntityPageScan fn = new EntityPageScan(new HashSet<>(Arrays.asList(classes.split("\n"))),
                new HashSet<>(Arrays.asList(properties.split("\n"))), clean, pageScope, reasons.split("\n"));
        HashMap<String, String> conf = new HashMap<>();
        for (Map.Entry<String, String> e : spark.sparkContext().hadoopConfiguration()) conf.put(e.getKey(), e.getValue());
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        JavaRDD<Row> rows = jsc.parallelize(Arrays.asList(files), Math.max(files.length, 1))
                .mapPartitions(paths -> fn.new Scanner(paths, conf, ignoreCorrupt));
        return spark.createDataFrame(rows, SCHEMA);
    }

    /** One entity on the current page: quads seen, kept tokens, dropped "reason\ttoken". */
    private static final class EntityPage {
        final long group;
        long lines;
        final LinkedHashSet<String> kept = new LinkedHashSet<>();
        final LinkedHashSet<String> dropped = new LinkedHashSet<>();

        EntityPage(long group) {
            this.group = group;
        }
    }

    private final class Scanner implements Iterator<Row> {
        private final Iterator<String> files;
        private final Map<String, String> hadoopConf;
        private final boolean ignoreCorrupt;
        private LineReader reader;
        private final ArrayDeque<Row> out = new ArrayDeque<>();
        private final LinkedHashMap<String, EntityPage> page = new LinkedHashMap<>();
        private final Quad q = new Quad();
        // Tokens of the predicates and types seen in this partition: a few hundred distinct keys.
        private final HashMap<String, String[]> tokens = new HashMap<>();
        private String file;
        private String graph;    // the current page's graph term as written
        private String pageUrl;
        private long pageGroup;
        private String subject;  // the subject of the line before, and its entity on this page
        private EntityPage current;
        private long lineNo;
        private long skipped;
        private boolean finished;

        Scanner(Iterator<String> files, Map<String, String> hadoopConf, boolean ignoreCorrupt) {
            this.files = files;
            this.hadoopConf = hadoopConf;
            this.ignoreCorrupt = ignoreCorrupt;
        }

        @Override
        public boolean hasNext() {
            while (out.isEmpty() && !finished) {
                try {
                    if (reader == null) {
                        if (!files.hasNext()) {
                            finished = true;
                            break;
                        }
                        file = files.next();
                        reader = new LineReader(file, hadoopConf);
                    }
                    String line = reader.next();
                    if (line != null) {
                        line(line);
                    } else {
                        closeReader();
                        endFile();
                    }
                } catch (IOException e) {
                    damaged(e);
                }
            }
            return !out.isEmpty();
        }

        /** The file broke off: keep what came before and say why, or fail the task (the flag). */
        private void damaged(IOException e) {
            String what = file.endsWith(".gz") ? "gzip" : "input";
            String why = (e instanceof java.io.EOFException ? "truncated " : "corrupt ") + what + " ("
                    + e.getClass().getSimpleName() + ": " + e.getMessage() + ") after " + String.format("%,d", lineNo) + " lines";
            if (!ignoreCorrupt) {
                throw new RuntimeException("cannot read " + file + ": " + why
                        + " (--ignore-corrupt-files keeps the lines before the damage and names the file in rejects)", e);
            }
            try {
                closeReader();
            } catch (IOException ignored) {
                // the stream is broken already; the damage row below is what matters
            }
            out.add(RowFactory.create("damage", file, "", 0L, "", "", null, why, group(file)));
            endFile();
        }

        private void closeReader() throws IOException {
            LineReader r = reader;
            reader = null;
            if (r != null) r.close();
        }

        @Override
        public Row next() {
            if (!hasNext()) throw new java.util.NoSuchElementException();
            return out.poll();
        }

        private void line(String line) {
            lineNo++;
            if (line == null) line = "";
            if (blank(line)) {
                skipped++;
                return;
            }
            if (line.indexOf('\uFFFD') >= 0 || !q.parse(line)) {
                out.add(RowFactory.create("reject", file, Long.toString(lineNo), 1L, "", "", lineNo, line, group(file)));
                return;
            }
            if (!q.same(q.g0, q.g1, graph)) {
                flushPage();
                graph = q.g();
                pageUrl = iriValue(graph);
                pageGroup = group(pageUrl);
            }
            if (!q.same(q.s0, q.s1, subject)) {
                subject = q.s();
                boolean scoped = pageScope || subject.startsWith("_:");
                String entity = scoped ? pageUrl + " " + subject : iriValue(subject);
                current = page.get(entity);
                if (current == null) {
                    current = new EntityPage(scoped ? pageGroup : group(entity));
                    page.put(entity, current);
                }
            }
            boolean isType = q.same(q.p0, q.p1, RDF_TYPE);
            if (tokens.size() > 100_000) tokens.clear();  // odd inputs (literal types) must not grow it unbounded
            String[] tr = tokens.computeIfAbsent(isType ? "isa:" + q.o() : q.p(), this::token);
            current.lines++;
            if (tr[1] == null) current.kept.add(tr[0]);
            else current.dropped.add(tr[1]);
        }

        /** Token and dropped "reason\ttoken" (null: kept) of a type ("isa:" + object) or a predicate. */
        private String[] token(String key) {
            boolean isType = key.startsWith("isa:");
            String term = isType ? key.substring(4) : key;
            String local = schemaLocal(term);
            String name = local.isEmpty() ? term : local;
            String token = isType ? "isa:" + name : name;
            String reason = null;
            if (clean) {
                if (isType) reason = local.isEmpty() ? reasons[0] : classes.contains(local) ? null : reasons[1];
                else reason = local.isEmpty() ? reasons[2] : properties.contains(local) ? null : reasons[3];
            }
            return new String[] {token, reason == null ? null : reason + "\t" + token};
        }

        private void flushPage() {
            // One row per page (block): what the page counter counts, without the entities' rows.
            if (!page.isEmpty()) out.add(RowFactory.create("page", pageUrl, "", 0L, "", "", null, null, pageGroup));
            for (var en : page.entrySet()) {
                EntityPage e = en.getValue();
                out.add(RowFactory.create("quad", en.getKey(), pageUrl, e.lines,
                        joinSorted(e.kept), joinSorted(e.dropped), null, null, e.group));
            }
            page.clear();
            subject = null;
            current = null;
        }

        private void endFile() {
            if (file == null) return;
            flushPage();
            if (skipped > 0) out.add(RowFactory.create("skip", file, "", skipped, "", "", null, null, group(file)));
            out.add(RowFactory.create("file", file, "", lineNo, "", "", null, null, group(file)));
            graph = null;
            pageUrl = null;
            lineNo = 0;
            skipped = 0;
            file = null;
        }
    }

    /**
     * The group of a row, {@code h}: the merge sorts by it alone (a radix sort of one long, no
     * string comparisons) and unites the entities of each run of equal {@code h}. A page's blank
     * nodes share the group of its URL, so they stay together; an IRI has the group of the IRI.
     * Two groups that share a hash only make one run: the merge is exact whatever the collisions
     * ({@link #collideGroups} makes them happen, for the tests).
     */
    static long group(String s) {
        return hash(s) & groupMask;
    }

    private static volatile long groupMask = -1L;

    /** Keeps only {@code mask}'s bits of every group hash (all: -1), so that unrelated entities,
     * C-sets, domains and pages share runs; returns the mask before. A test hook: the tables must
     * not change. */
    public static long collideGroups(long mask) {
        long before = groupMask;
        groupMask = mask;
        return before;
    }

    /** A 64-bit hash of a string. */
    static long hash(String s) {
        // FNV-1a over the UTF-16 units, then MurmurHash3's 64-bit finaliser to spread the bits.
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

    /** Code-point order (UTF-8 byte order, as Spark's and Python's sorts): String.compareTo
     * orders by UTF-16 units, which differs above U+D7FF. */
    static int compareCodePoints(String a, String b) {
        int n = Math.min(a.length(), b.length());
        for (int i = 0; i < n; i++) {
            char x = a.charAt(i), y = b.charAt(i);
            if (x == y) continue;
            boolean sx = Character.isSurrogate(x), sy = Character.isSurrogate(y);
            if (sx == sy) return x - y;
            return sx ? 1 : -1;  // a surrogate pair encodes a code point above every BMP one
        }
        return a.length() - b.length();
    }

    /** The set's elements in code-point order, joined by {@link #SEP}. */
    static String joinSorted(java.util.Collection<String> set) {
        if (set.isEmpty()) return "";
        if (set.size() == 1) return set.iterator().next();
        String[] a = set.toArray(EMPTY);
        Arrays.sort(a, EntityPageScan::compareCodePoints);
        return String.join(SEP, a);
    }

    /** Spark SQL's trim() strips spaces only: a line is blank when nothing else is left, a comment when it starts with '#'. */
    static boolean blank(String line) {
        int i = 0, n = line.length();
        while (i < n && line.charAt(i) == ' ') i++;
        return i == n || line.charAt(i) == '#';
    }

    /** {@code <http://x/>} -> {@code http://x/}; blank nodes unchanged. */
    static String iriValue(String term) {
        return term.length() >= 2 && term.charAt(0) == '<' && term.charAt(term.length() - 1) == '>'
                ? term.substring(1, term.length() - 1) : term;
    }

    /** {@code <https://www.schema.org/name>} -> {@code name}; empty outside the schema.org namespace. */
    static String schemaLocal(String term) {
        int n = term.length();
        if (n < 2 || term.charAt(0) != '<' || term.charAt(n - 1) != '>' || !term.startsWith("http", 1)) return "";
        int i = 5;
        if (i < n && term.charAt(i) == 's') i++;
        if (!term.startsWith("://", i)) return "";
        i += 3;
        if (term.startsWith("www.", i)) i += 4;
        if (!term.startsWith("schema.org/", i)) return "";
        i += 11;
        if (i >= n - 1 || term.indexOf('>', i) != n - 1) return "";
        return term.substring(i, n - 1);
    }

    /** One line's terms; {@link #parse} fills them and says whether the whole line is a quad. */
    static final class Quad implements Serializable {
        private static final long serialVersionUID = 1L;
        // Term boundaries [start, end) in the line: substrings are made only where needed, since
        // most quads repeat the subject and page of the line before.
        int s0, s1, p0, p1, o0, o1, g0, g1;
        String line;
        private int n;

        String s() { return line.substring(s0, s1); }
        String p() { return line.substring(p0, p1); }
        String o() { return line.substring(o0, o1); }
        String g() { return line.substring(g0, g1); }

        /** Whether the term [start, end) equals {@code other}, without making a string. */
        boolean same(int start, int end, String other) {
            return other != null && other.length() == end - start && line.regionMatches(start, other, 0, end - start);
        }

        boolean parse(String text) {
            line = text;
            n = text.length();
            int i = spaces(0);
            int j = subject(i);
            if (j < 0) return false;
            s0 = i;
            s1 = j;
            i = gap(j);
            if (i < 0 || (j = iri(i)) < 0) return false;
            p0 = i;
            p1 = j;
            i = gap(j);
            if (i < 0 || (j = object(i)) < 0) return false;
            o0 = i;
            o1 = j;
            i = gap(j);
            if (i < 0 || (j = subject(i)) < 0) return false;
            g0 = i;
            g1 = j;
            i = spaces(j);
            if (i > j && i < n && line.charAt(i) != '.') {  // a fifth term, ignored
                if ((j = subject(i)) < 0) return false;
                i = spaces(j);
            }
            if (i >= n || line.charAt(i) != '.') return false;
            i++;
            while (i < n && (line.charAt(i) == ' ' || line.charAt(i) == '\t' || line.charAt(i) == '\r')) i++;
            return i == n;
        }

        private int spaces(int i) {
            while (i < n && (line.charAt(i) == ' ' || line.charAt(i) == '\t')) i++;
            return i;
        }

        /** At least one space or tab, then the next term's start; -1 when there is none. */
        private int gap(int i) {
            int j = spaces(i);
            return j > i && j < n ? j : -1;
        }

        private int subject(int i) {
            if (i >= n) return -1;
            return line.charAt(i) == '<' ? iri(i) : bnode(i);
        }

        private int object(int i) {
            if (i >= n) return -1;
            char c = line.charAt(i);
            return c == '<' ? iri(i) : c == '"' ? literal(i) : bnode(i);
        }

        private int iri(int i) {
            if (i >= n || line.charAt(i) != '<') return -1;
            i++;
            while (i < n) {
                char c = line.charAt(i);
                if (c == '>') return i + 1;
                if (c == '\\') {
                    if ((i = uchar(i)) < 0) return -1;
                    continue;
                }
                if (c <= 0x20 || c == '<' || c == '"') return -1;
                i++;
            }
            return -1;
        }

        private static boolean bnodeChar(char c) {
            return c > 0x20 && c != '<' && c != '>' && c != '"' && c != '.';
        }

        /** {@code _:label}: dots inside a label, never at its end (the line's final " ." is not part of it). */
        private int bnode(int i) {
            if (!line.startsWith("_:", i)) return -1;
            int j = i + 2;
            while (j < n && bnodeChar(line.charAt(j))) j++;
            if (j == i + 2) return -1;
            while (j < n && line.charAt(j) == '.') {
                int k = j;
                while (k < n && line.charAt(k) == '.') k++;
                int m = k;
                while (m < n && bnodeChar(line.charAt(m))) m++;
                if (m == k) break;
                j = m;
            }
            return j;
        }

        private int literal(int i) {
            i++;  // opening quote
            while (true) {
                if (i >= n) return -1;
                char c = line.charAt(i);
                if (c == '"') break;
                if (c == '\\') {
                    if (i + 1 >= n) return -1;
                    char e = line.charAt(i + 1);
                    if (e == 'u' || e == 'U') {
                        if ((i = uchar(i)) < 0) return -1;
                    } else if ("tbnrf\"'\\".indexOf(e) >= 0) {
                        i += 2;
                    } else {
                        return -1;
                    }
                    continue;
                }
                if (c == '\n' || c == '\r') return -1;
                i++;
            }
            i++;  // closing quote
            if (i < n && line.charAt(i) == '@') {
                int j = i + 1;
                while (j < n && isAlpha(line.charAt(j))) j++;
                if (j == i + 1) return -1;
                while (j < n && line.charAt(j) == '-') {
                    int k = j + 1;
                    while (k < n && (isAlpha(line.charAt(k)) || isDigit(line.charAt(k)))) k++;
                    if (k == j + 1) return -1;
                    j = k;
                }
                return j;
            }
            if (line.startsWith("^^", i)) return iri(i + 2);
            return i;
        }

        /** {@code \\uXXXX} or {@code \\UXXXXXXXX} at i; the index after it, or -1. */
        private int uchar(int i) {
            if (i + 1 >= n) return -1;
            char k = line.charAt(i + 1);
            int digits = k == 'u' ? 4 : k == 'U' ? 8 : -1;
            if (digits < 0 || i + 2 + digits > n) return -1;
            for (int d = i + 2; d < i + 2 + digits; d++) {
                if (!isHex(line.charAt(d))) return -1;
            }
            return i + 2 + digits;
        }

        private static boolean isAlpha(char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        }

        private static boolean isDigit(char c) {
            return c >= '0' && c <= '9';
        }

        private static boolean isHex(char c) {
            return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        }
    }

    /**
     * For tests, in one call: newline-separated lines in, one line out per line in: its terms
     * s, p, o, g joined by U+0001, or an empty line when it is not a quad.
     */
    public static String terms(String lines) {
        StringBuilder out = new StringBuilder();
        Quad q = new Quad();
        for (String line : lines.split("\n", -1)) {
            if (line.indexOf('\uFFFD') < 0 && q.parse(line)) {
                out.append(q.s()).append('\u0001').append(q.p()).append('\u0001').append(q.o()).append('\u0001').append(q.g());
            }
            out.append('\n');
        }
        return out.toString();
    }
}
