package llm4schema;

import java.io.Serializable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
 * <p>Grammar (W3C N-Quads, plus WDC's fifth term): {@code S P O [G [X]] .} with S, G and X an IRI
 * or a blank node, P an IRI, O an IRI, blank node or literal ({@code "..."} with escapes, then
 * {@code @lang} or {@code ^^<datatype>}); spaces or tabs between terms, none needed where a term's
 * end is plain ({@code <a><b>"c".}), as in W3C's grammar. X is WebDataCommons' fifth term, the
 * extractor that read the quad ({@code <ex:html-microdata>}): read and counted by value, unless
 * {@code strict} (W3C N-Quads has four terms at most), which rejects it with its own reason. A line
 * without G is a triple of the default graph: valid, but it has no page, so it is counted
 * ({@code default_graph}), not made an entity.
 * IRIs allow any character but controls, space, {@code <>"\} (real WDC IRIs carry
 * {@code {search_term_string}}), plus backslash-u escapes. A comment ({@code #} to the end of the
 * line) may follow the final {@code .}; a line of spaces, tabs and a comment is skipped. A line
 * that is not well-formed UTF-8 is damaged (a U+FFFD written as such is a character like any
 * other), and so is a line over {@code max_line_bytes}: the scan gives their reasons
 * (kind {@code reject:<reason>}); the reason of any other rejected line is computed in Spark SQL
 * on the (few) rejected lines: see udfs/corpus/nquads.py.
 *
 * <p>Lines as extractors write them (udfs/runtime/lines.py has the same rules, for every reader of
 * the project): a byte order mark as a file's first bytes is skipped and counted (a
 * {@code byte_order_mark} row), one that starts any later line is a reject with its reason; a
 * {@code \\uD83D\\uDE00} surrogate pair is the one code point it encodes; an escape of any other
 * surrogate, or of a value above U+10FFFF, is a reject whose reason names the escape.
 *
 * <p>Input: file paths, one per partition, read in order. Output rows: {@link #SCHEMA}.
 */
public final class EntityPageScan implements Serializable {
    private static final long serialVersionUID = 1L;
    static final byte[] RDF_TYPE_BYTES = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>".getBytes(StandardCharsets.UTF_8);
    static final String[] EMPTY = new String[0];
    /** Joins the tokens of a set: newlines cannot occur in an N-Quads term (spaces can, in literals). */
    static final String SEP = "\n";

    public static final StructType SCHEMA = new StructType()
            // quad | page | reject[:reason] | skip | file | file_quads | file_graphs | default_graph
            // | fifth_term (k1 the term, k2 the file, n its lines) | damage | byte_order_mark (n 1: the
            // file began with one)
            .add("kind", DataTypes.StringType, false)
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
    // type not schema, type unknown, property not schema, property unknown; undecodable line, line too long;
    // a fifth term under strict; a byte order mark inside the file; an escape of a surrogate, of a value
    // above U+10FFFF ("{escape}" the escape as written): udfs/runtime/lines.py's texts
    private final String[] reasons;
    private final long maxLineBytes;
    private final int sampleBytes;
    private final boolean strict;

    /** Distinct fifth-term values counted one by one per file; the rest share {@link #OTHER_FIFTH}. WDC
     * writes a handful (one per extractor); a damaged file could make a value of every line. */
    static final int FIFTH_TERM_VALUES = 100;
    static final String OTHER_FIFTH = "(other values)";

    public EntityPageScan(Set<String> classes, Set<String> properties, boolean clean, boolean pageScope,
                          String[] reasons, long maxLineBytes, int sampleBytes, boolean strict) {
        this.classes = classes;
        this.properties = properties;
        this.clean = clean;
        this.pageScope = pageScope;
        this.reasons = reasons;
        this.maxLineBytes = maxLineBytes;
        this.sampleBytes = sampleBytes;
        this.strict = strict;
    }

    /**
     * Entry point from Python: one task per input file, each read by a {@link LineReader}.
     * Newline-separated vocabularies and reasons keep the py4j call simple; the driver's Hadoop
     * configuration travels with the tasks, so what opens a file on the driver (local, HDFS, S3A)
     * opens it on an executor. With {@code ignoreCorrupt} a file that cannot be read to its end
     * keeps the lines read before the damage and gets a {@code damage} row with the reason;
     * without it the task fails with the file and the reason in the message. A line over
     * {@code maxLineBytes} is a reject holding its first {@code sampleBytes}. {@code strict}: a
     * fifth term is a reject (W3C N-Quads); otherwise it is read (WDC's variant) and counted.
     */
    public static Dataset<Row> scan(SparkSession spark, String[] files, String classes, String properties,
                                    boolean clean, boolean pageScope, String reasons, boolean ignoreCorrupt,
                                    long maxLineBytes, int sampleBytes, boolean strict) {
        EntityPageScan fn = new EntityPageScan(new HashSet<>(Arrays.asList(classes.split("\n"))),
                new HashSet<>(Arrays.asList(properties.split("\n"))), clean, pageScope, reasons.split("\n"),
                maxLineBytes, sampleBytes, strict);
        HashMap<String, String> conf = new HashMap<>();
        for (Map.Entry<String, String> e : spark.sparkContext().hadoopConfiguration()) conf.put(e.getKey(), e.getValue());
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        // Each path travels with its place in the list ("index\tpath"): the scope of its blank nodes.
        String[] numbered = new String[files.length];
        for (int i = 0; i < files.length; i++) numbered[i] = i + "\t" + files[i];
        JavaRDD<Row> rows = jsc.parallelize(Arrays.asList(numbered), Math.max(files.length, 1))
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
        // Tokens of the predicates and of the types seen in this partition: a few hundred terms.
        private final TermTokens predicates = new TermTokens(), types = new TermTokens();
        private String file;
        private String fileScope;  // " #<index of the file in the input list>": appended to blank subjects
        private long quads;  // lines of this file that are quads
        private long defaultGraph;  // lines of this file that are triples of the default graph
        // This file's fifth terms by value, and the bytes of the line before's (most lines repeat it).
        private final LinkedHashMap<String, long[]> fifth = new LinkedHashMap<>();
        private byte[] fifthTerm = new byte[64];
        private int fifthLen = -1;
        private long[] fifthCount;
        private final LongSet graphs = new LongSet();  // hashes of this file's distinct graph terms
        // The bytes of the current page's graph term and of the line before's subject (length -1:
        // none): most lines repeat both, and a byte comparison settles it without a string.
        private byte[] graph = new byte[256], subject = new byte[256];
        private int graphLen = -1, subjectLen = -1;
        private String pageUrl;
        private long pageGroup;
        private EntityPage current;  // the entity of the line before's subject on this page
        private long lineNo;
        private long skipped;
        private boolean byteOrderMark;  // this file began with one
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
                        String numbered = files.next();
                        int tab = numbered.indexOf('\t');
                        fileScope = " #" + numbered.substring(0, tab);
                        file = numbered.substring(tab + 1);
                        reader = new LineReader(file, hadoopConf, maxLineBytes, sampleBytes);
                    }
                    if (reader.next()) {
                        line();
                    } else {
                        byteOrderMark = reader.byteOrderMark();
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
            String how = e instanceof LineReader.CannotOpen ? "cannot open "
                    : e instanceof java.io.EOFException ? "truncated " : "corrupt ";
            String why = how + what + " (" + e.getClass().getSimpleName() + ": " + e.getMessage() + ") after "
                    + String.format("%,d", lineNo) + " lines";
            if (!ignoreCorrupt) {
                throw new RuntimeException("cannot read " + file + ": " + why
                        + " (--ignore-corrupt-files keeps the lines before the damage and names the file in rejects)", e);
            }
            if (reader != null) byteOrderMark = reader.byteOrderMark();
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

        private void line() {
            lineNo++;
            if (reader.tooLong()) {
                reject(reasons[5] + " (" + String.format("%,d", maxLineBytes) + " bytes)", reader.sampleText());
                return;
            }
            byte[] b = reader.buf();
            int from = reader.start(), to = reader.end();
            if (blank(b, from, to)) {
                skipped++;
                return;
            }
            // Only a line with a byte outside ASCII can be invalid UTF-8: checked on the bytes, since
            // decoding turns invalid bytes into U+FFFD, which a valid line may hold too.
            if (reader.nonAscii() && !validUtf8(b, from, to)) {
                reject(reasons[4], reader.text());
                return;
            }
            if (to - from >= 3 && b[from] == (byte) 0xef && b[from + 1] == (byte) 0xbb && b[from + 2] == (byte) 0xbf) {
                reject(reasons[7], reader.text());
                return;
            }
            if (!q.parse(b, from, to)) {
                reject(q.badEscape < 0 ? null : notScalar(q.text(q.badEscape, q.badEscapeEnd)), reader.text());
                return;
            }
            if (q.x0 >= 0) {
                if (strict) {
                    reject(reasons[6], reader.text());
                    return;
                }
                countFifth();
            }
            if (q.g0 < 0) {
                defaultGraph++;
                return;
            }
            quads++;
            if (!q.same(q.g0, q.g1, graph, graphLen)) {
                flushPage();
                graph = copy(b, q.g0, q.g1, graph);
                graphLen = q.g1 - q.g0;
                String g = q.g();
                // A blank node label is scoped to its file (N-Quads): the same "_:g1" in two files
                // is two pages, named by the label and the file.
                pageUrl = g.startsWith("_:") ? g + " " + file : iriValue(g);
                pageGroup = group(pageUrl);
                graphs.add(hash(pageUrl));
            }
            if (!q.same(q.s0, q.s1, subject, subjectLen)) {
                subject = copy(b, q.s0, q.s1, subject);
                subjectLen = q.s1 - q.s0;
                String s = q.s();
                boolean blank = s.startsWith("_:");
                boolean scoped = pageScope || blank;
                // A blank subject is its page's and its file's (an IRI page may recur in another file).
                String entity = scoped ? pageUrl + " " + s + (blank ? fileScope : "") : iriValue(s);
                current = page.get(entity);
                if (current == null) {
                    current = new EntityPage(scoped ? pageGroup : group(entity));
                    page.put(entity, current);
                }
            }
            boolean isType = q.same(q.p0, q.p1, RDF_TYPE_BYTES, RDF_TYPE_BYTES.length);
            int t0 = isType ? q.o0 : q.p0, t1 = isType ? q.o1 : q.p1;
            TermTokens table = isType ? types : predicates;
            String[] tr = table.get(b, t0, t1);
            if (tr == null) {
                tr = token(isType ? "isa:" + q.o() : q.p());
                table.put(b, t0, t1, tr);
            }
            current.lines++;
            if (tr[1] == null) current.kept.add(tr[0]);
            else current.dropped.add(tr[1]);
        }

        private void countFifth() {
            if (!q.same(q.x0, q.x1, fifthTerm, fifthLen)) {
                fifthTerm = copy(q.b, q.x0, q.x1, fifthTerm);
                fifthLen = q.x1 - q.x0;
                String x = q.x();
                fifthCount = fifth.get(x);
                if (fifthCount == null) {
                    if (fifth.size() >= FIFTH_TERM_VALUES) x = OTHER_FIFTH;
                    fifthCount = fifth.computeIfAbsent(x, k -> new long[1]);
                }
            }
            fifthCount[0]++;
        }

        /** Why the escape {@code escape} (as written) is refused: reasons[8] or [9], by its value. */
        private String notScalar(String escape) {
            boolean above = Long.parseLong(escape.substring(2), 16) > Character.MAX_CODE_POINT;
            return reasons[above ? 9 : 8].replace("{escape}", escape);
        }

        /** A rejected line: its reason given here, or (null) computed in Spark SQL from the line. */
        private void reject(String reason, String text) {
            out.add(RowFactory.create(reason == null ? "reject" : "reject:" + reason, file, Long.toString(lineNo), 1L,
                    "", "", lineNo, text, group(file)));
        }

        /** Token and dropped "reason\ttoken" (null: kept) of a type ("isa:" + object) or a predicate. */
        private String[] token(String key) {
            boolean isType = key.startsWith("isa:");
            String term = isType ? key.substring(4) : key;
            if (term.startsWith("<")) term = "<" + iriValue(term) + ">";
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
            subjectLen = -1;
            current = null;
        }

        private void endFile() {
            if (file == null) return;
            flushPage();
            if (skipped > 0) out.add(RowFactory.create("skip", file, "", skipped, "", "", null, null, group(file)));
            out.add(RowFactory.create("file", file, "", lineNo, "", "", null, null, group(file)));
            out.add(RowFactory.create("file_quads", file, "", quads, "", "", null, null, group(file)));
            out.add(RowFactory.create("file_graphs", file, "", (long) graphs.size(), "", "", null, null, group(file)));
            if (defaultGraph > 0) {
                out.add(RowFactory.create("default_graph", file, "", defaultGraph, "", "", null, null, group(file)));
            }
            if (byteOrderMark) out.add(RowFactory.create("byte_order_mark", file, "", 1L, "", "", null, null, group(file)));
            byteOrderMark = false;
            for (var en : fifth.entrySet()) {
                out.add(RowFactory.create("fifth_term", en.getKey(), file, en.getValue()[0], "", "", null, null, group(file)));
            }
            fifth.clear();
            fifthLen = -1;
            fifthCount = null;
            defaultGraph = 0;
            quads = 0;
            graphs.clear();
            graphLen = -1;
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

    /**
     * A set of longs (open addressing; 0 stands for itself in a flag): a file's distinct graph
     * terms, counted by a 64-bit hash of their bytes in 8 to 16 bytes each. Two terms of one file
     * that share a hash count once: at 10^6 pages per file the chance is about 3 in 10^8.
     */
    static final class LongSet {
        private long[] slots = new long[1 << 10];
        private int size;
        private boolean zero;

        void add(long v) {
            if (v == 0) {
                if (!zero) size++;
                zero = true;
                return;
            }
            if (2 * (size + 1) > slots.length) grow();
            if (insert(slots, v)) size++;
        }

        private static boolean insert(long[] into, long v) {
            int mask = into.length - 1;
            for (int i = (int) (v ^ (v >>> 32)) & mask; ; i = (i + 1) & mask) {
                if (into[i] == v) return false;
                if (into[i] == 0) {
                    into[i] = v;
                    return true;
                }
            }
        }

        private void grow() {
            long[] bigger = new long[2 * slots.length];
            for (long v : slots) if (v != 0) insert(bigger, v);
            slots = bigger;
        }

        int size() {
            return size;
        }

        void clear() {
            if (slots.length > 1 << 10) slots = new long[1 << 10];
            else Arrays.fill(slots, 0L);
            size = 0;
            zero = false;
        }
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

    /** A line of N-Quads white space (spaces, tabs; a CR, an end of line) and at most a comment. */
    static boolean blank(byte[] b, int from, int to) {
        int i = from;
        while (i < to && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r')) i++;
        return i == to || b[i] == '#';
    }

    /** Whether {@code b[from, to)} is well-formed UTF-8 (no overlong form, no surrogate, nothing above
     * U+10FFFF): what a strict decoder, Python's among them, accepts. */
    static boolean validUtf8(byte[] b, int from, int to) {
        int i = from;
        while (i < to) {
            int c = b[i] & 0xff;
            if (c < 0x80) {
                i++;
                continue;
            }
            int n = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
            if (n < 0 || i + n >= to) return false;  // a sequence cut by the end of the line
            int lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80, hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
            int c1 = b[i + 1] & 0xff;
            if (c1 < lo || c1 > hi) return false;
            for (int k = 2; k <= n; k++) {
                if ((b[i + k] & 0xc0) != 0x80) return false;
            }
            i += n + 1;
        }
        return true;
    }

    /** {@code b[from, to)} copied into {@code into}, or into a larger array when it does not fit. */
    static byte[] copy(byte[] b, int from, int to, byte[] into) {
        if (into.length < to - from) into = new byte[Math.max(to - from, 2 * into.length)];
        System.arraycopy(b, from, into, 0, to - from);
        return into;
    }

    /**
     * The tokens of predicate (or type) terms, found by the term's bytes without making a string:
     * an open-addressing table of a few hundred terms, looked up once per quad.
     */
    static final class TermTokens {
        private static final int LIMIT = 100_000;  // odd inputs (literal types) must not grow it unbounded
        private byte[][] keys = new byte[256][];
        private String[][] values = new String[256][];
        private int size;
        long probes;  // slots looked at, for the test of its growth

        String[] get(byte[] b, int from, int to) {
            int mask = keys.length - 1;
            for (int i = hash(b, from, to) & mask; ; i = (i + 1) & mask) {
                probes++;
                byte[] k = keys[i];
                if (k == null) return null;
                if (Arrays.equals(k, 0, k.length, b, from, to)) return values[i];
            }
        }

        void put(byte[] b, int from, int to, String[] value) {
            if (size >= LIMIT) {
                keys = new byte[256][];
                values = new String[256][];
                size = 0;
            }
            if (2 * (size + 1) > keys.length) {
                byte[][] k = keys;
                String[][] v = values;
                keys = new byte[2 * k.length][];
                values = new String[2 * k.length][];
                for (int i = 0; i < k.length; i++) if (k[i] != null) insert(k[i], v[i]);
            }
            insert(Arrays.copyOfRange(b, from, to), value);
            size++;
        }

        private void insert(byte[] key, String[] value) {
            int mask = keys.length - 1, i = hash(key, 0, key.length) & mask;
            probes++;
            while (keys[i] != null) {
                i = (i + 1) & mask;
                probes++;
            }
            keys[i] = key;
            values[i] = value;
        }

        /** All the bytes, eight at a time: a hash of the length and the last 16 bytes made every
         * predicate of one length and ending collide, and the probes quadratic (30k such
         * predicates: 42.6 s in this table alone). */
        private static int hash(byte[] b, int from, int to) {
            long h = (to - from) * 0x9e3779b97f4a7c15L;
            int i = from;
            for (; i + 8 <= to; i += 8) h = (h ^ (long) WORDS.get(b, i)) * 0xbf58476d1ce4e5b9L;
            for (; i < to; i++) h = (h ^ b[i]) * 0x100000001b3L;
            h ^= h >>> 31;
            h *= 0x94d049bb133111ebL;
            return (int) (h ^ (h >>> 32));
        }

        private static final java.lang.invoke.VarHandle WORDS =
                java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
    }

    /** {@code <http://x/>} -> {@code http://x/}, its backslash-u escapes decoded (an IRI written
     * with them is the same IRI: one entity, one page); blank nodes unchanged. */
    static String iriValue(String term) {
        return term.length() >= 2 && term.charAt(0) == '<' && term.charAt(term.length() - 1) == '>'
                ? unescape(term.substring(1, term.length() - 1)) : term;
    }

    /** An IRI's {@code \\uXXXX} and {@code \\UXXXXXXXX} escapes decoded (the parser let no other
     * backslash through), a {@code \\uD83D\\uDE00} surrogate pair to its one code point; an escape
     * that is no Unicode scalar value (the parser rejects its line) is kept as written. */
    static String unescape(String iri) {
        int i = iri.indexOf('\\');
        if (i < 0) return iri;
        StringBuilder out = new StringBuilder(iri.length()).append(iri, 0, i);
        while (i < iri.length()) {
            char c = iri.charAt(i);
            int digits = c != '\\' || i + 1 >= iri.length() ? 0 : iri.charAt(i + 1) == 'u' ? 4 : iri.charAt(i + 1) == 'U' ? 8 : 0;
            long cp = digits > 0 ? hex(iri, i + 2, i + 2 + digits) : -1;
            int next = i + 2 + digits;
            if (digits == 4 && cp >= 0xd800 && cp <= 0xdbff && next + 1 < iri.length() && iri.charAt(next) == '\\'
                    && iri.charAt(next + 1) == 'u') {
                long low = hex(iri, next + 2, next + 6);
                if (low >= 0xdc00 && low <= 0xdfff) {
                    out.appendCodePoint((int) (0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00)));
                    i = next + 6;
                    continue;
                }
            }
            if (cp >= 0 && cp <= Character.MAX_CODE_POINT && !(cp >= 0xd800 && cp <= 0xdfff)) {
                out.appendCodePoint((int) cp);
                i = next;
                continue;
            }
            out.append(c);
            i++;
        }
        return out.toString();
    }

    /** The hex number {@code s[from, to)}, or -1 when it is out of {@code s} or not all hex digits. */
    static long hex(String s, int from, int to) {
        if (to > s.length()) return -1;
        long v = 0;
        for (int k = from; k < to; k++) {
            int d = Character.digit(s.charAt(k), 16);
            if (d < 0) return -1;
            v = v * 16 + d;
        }
        return v;
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

    /** One line's terms; {@link #parse} finds them and says whether the whole line is a quad. */
    static final class Quad implements Serializable {
        private static final long serialVersionUID = 1L;
        // Term boundaries [start, end) in the line's bytes: strings are made only where needed,
        // since most quads repeat the subject and page of the line before. g0 < 0: no graph term
        // (the default graph); x0 < 0: no fifth term.
        int s0, s1, p0, p1, o0, o1, g0, g1, x0, x1;
        // [badEscape, badEscapeEnd): the escape that made parse fail, being no Unicode scalar value
        // (badEscape -1: the line failed for another reason, or parsed)
        int badEscape, badEscapeEnd;
        byte[] b;
        private int n;  // the line's end in b

        String s() { return text(s0, s1); }
        String p() { return text(p0, p1); }
        String o() { return text(o0, o1); }
        String g() { return text(g0, g1); }
        String x() { return text(x0, x1); }

        String text(int start, int end) {
            return new String(b, start, end - start, StandardCharsets.UTF_8);
        }

        /** Whether the term [start, end) equals the first {@code len} bytes of {@code other} (none when len < 0). */
        boolean same(int start, int end, byte[] other, int len) {
            return len == end - start && Arrays.equals(b, start, end, other, 0, len);
        }

        /** Parses the valid UTF-8 line {@code bytes[from, to)}: every delimiter is ASCII, so bytes
         * and characters give the same terms. Three to five terms (see the class comment); the
         * white space between two terms may be empty, since no term can run on into the next: an
         * IRI and a literal end with their delimiter, a language tag or a blank-node label with the
         * first character it cannot hold, and such a character starts every term. */
        boolean parse(byte[] bytes, int from, int to) {
            b = bytes;
            n = to;
            g0 = g1 = x0 = x1 = -1;
            badEscape = badEscapeEnd = -1;
            int i = spaces(from);
            int j = subject(i);
            if (j < 0) return false;
            s0 = i;
            s1 = j;
            i = spaces(j);
            if ((j = iri(i)) < 0) return false;
            p0 = i;
            p1 = j;
            i = spaces(j);
            if ((j = object(i)) < 0) return false;
            o0 = i;
            o1 = j;
            i = spaces(j);
            if (i < n && b[i] != '.') {
                if ((j = subject(i)) < 0) return false;
                g0 = i;
                g1 = j;
                i = spaces(j);
                if (i < n && b[i] != '.') {
                    if ((j = subject(i)) < 0) return false;
                    x0 = i;
                    x1 = j;
                    i = spaces(j);
                }
            }
            if (i >= n || b[i] != '.') return false;
            i++;
            while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r')) i++;
            return i == n || b[i] == '#';  // a comment runs to the end of the line
        }

        private int spaces(int i) {
            while (i < n && (b[i] == ' ' || b[i] == '\t')) i++;
            return i;
        }

        private int subject(int i) {
            if (i >= n) return -1;
            return b[i] == '<' ? iri(i) : bnode(i);
        }

        private int object(int i) {
            if (i >= n) return -1;
            byte c = b[i];
            return c == '<' ? iri(i) : c == '"' ? literal(i) : bnode(i);
        }

        /** An absolute IRI: a scheme (a letter, then letters, digits, "+", "-", ".") and a colon
         * first (N-Quads admits no relative IRI), then any character but controls, space and
         * {@code <>"\}, or a backslash-u escape. */
        private int iri(int i) {
            if (i >= n || b[i] != '<') return -1;
            i++;
            if (i >= n || !isAlpha(b[i])) return -1;
            while (i < n && (isAlpha(b[i]) || isDigit(b[i]) || b[i] == '+' || b[i] == '-' || b[i] == '.')) i++;
            if (i >= n || b[i] != ':') return -1;
            while (i < n) {
                while (i < n && IRI_PLAIN[b[i] & 0xff]) i++;
                if (i >= n) return -1;
                byte c = b[i];
                if (c == '>') return i + 1;
                if (c == '\\') {
                    if ((i = uchar(i)) < 0) return -1;
                    continue;
                }
                if ((c >= 0 && c <= 0x20) || c == '<' || c == '"') return -1;  // bytes >= 0x80 are negative
                i++;
            }
            return -1;
        }

        // The bytes that need no decision inside an IRI, a blank node label (but '.') and a literal:
        // one table lookup per byte in the loops that walk most of a line.
        private static final boolean[] IRI_PLAIN = new boolean[256], BNODE = new boolean[256], LITERAL_PLAIN = new boolean[256];
        static {
            for (int c = 0; c < 256; c++) {
                boolean control = c <= 0x20;
                IRI_PLAIN[c] = !control && c != '<' && c != '>' && c != '"' && c != '\\';
                // W3C BLANK_NODE_LABEL's ASCII characters (PN_CHARS: letters, digits, "_", "-"; "." inside
                // only); any byte of a multi-byte character (the line is valid UTF-8: the letters
                // of other scripts the grammar admits, checked no further)
                BNODE[c] = c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                        || c == '_' || c == '-';
                LITERAL_PLAIN[c] = c != '"' && c != '\\' && c != '\n' && c != '\r';
            }
        }

        private static boolean bnodeChar(byte c) {
            return BNODE[c & 0xff];
        }

        private boolean startsWith(int i, char c0, char c1) {
            return i + 1 < n && b[i] == c0 && b[i + 1] == c1;
        }

        /** {@code _:label}: W3C's BLANK_NODE_LABEL (not starting with "-"), dots inside a label, never at
         * its end (the line's final " ." is not part of it). */
        private int bnode(int i) {
            if (!startsWith(i, '_', ':')) return -1;
            int j = i + 2;
            if (j < n && b[j] == '-') return -1;
            while (j < n && bnodeChar(b[j])) j++;
            if (j == i + 2) return -1;
            while (j < n && b[j] == '.') {
                int k = j;
                while (k < n && b[k] == '.') k++;
                int m = k;
                while (m < n && bnodeChar(b[m])) m++;
                if (m == k) break;
                j = m;
            }
            return j;
        }

        private int literal(int i) {
            i++;  // opening quote
            while (true) {
                while (i < n && LITERAL_PLAIN[b[i] & 0xff]) i++;
                if (i >= n) return -1;
                byte c = b[i];
                if (c == '"') break;
                if (c == '\\') {
                    if (i + 1 >= n) return -1;
                    byte e = b[i + 1];
                    if (e == 'u' || e == 'U') {
                        if ((i = uchar(i)) < 0) return -1;
                    } else if (e == 't' || e == 'b' || e == 'n' || e == 'r' || e == 'f' || e == '"' || e == '\'' || e == '\\') {
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
            if (i < n && b[i] == '@') {
                int j = i + 1;
                while (j < n && isAlpha(b[j])) j++;
                if (j == i + 1) return -1;
                while (j < n && b[j] == '-') {
                    int k = j + 1;
                    while (k < n && (isAlpha(b[k]) || isDigit(b[k]))) k++;
                    if (k == j + 1) return -1;
                    j = k;
                }
                return j;
            }
            if (startsWith(i, '^', '^')) return iri(i + 2);
            return i;
        }

        /** {@code \\uXXXX} or {@code \\UXXXXXXXX} at i, naming a Unicode scalar value, or a high
         * and a low surrogate as two {@code \\u} escapes (one code point); the index after it, or
         * -1 (an escape that is no scalar value then in {@link #badEscape}). */
        private int uchar(int i) {
            int end = hexEscape(i);
            if (end < 0) return -1;
            long cp = value(i + 2, end);
            if (end - i == 6 && cp >= 0xd800 && cp <= 0xdbff && end + 1 < n && b[end + 1] == 'u') {
                int lowEnd = hexEscape(end);
                if (lowEnd >= 0) {
                    long low = value(end + 2, lowEnd);
                    if (low >= 0xdc00 && low <= 0xdfff) return lowEnd;
                }
            }
            if ((cp >= 0xd800 && cp <= 0xdfff) || cp > Character.MAX_CODE_POINT) {
                badEscape = i;
                badEscapeEnd = end;
                return -1;
            }
            return end;
        }

        /** The end of the backslash escape of 4 ({@code u}) or 8 ({@code U}) hex digits at i, or -1. */
        private int hexEscape(int i) {
            if (i + 1 >= n || b[i] != '\\') return -1;
            byte k = b[i + 1];
            int digits = k == 'u' ? 4 : k == 'U' ? 8 : -1;
            if (digits < 0 || i + 2 + digits > n) return -1;
            for (int d = i + 2; d < i + 2 + digits; d++) {
                if (!isHex(b[d])) return -1;
            }
            return i + 2 + digits;
        }

        private long value(int from, int to) {
            long v = 0;
            for (int d = from; d < to; d++) v = v * 16 + Character.digit(b[d], 16);
            return v;
        }

        private static boolean isAlpha(byte c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        }

        private static boolean isDigit(byte c) {
            return c >= '0' && c <= '9';
        }

        private static boolean isHex(byte c) {
            return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        }
    }

    /** For tests: the slots a term table looks at to put, then get, each of the newline-separated terms. */
    public static long termTableProbes(String terms) {
        TermTokens t = new TermTokens();
        String[] value = {"x", null};
        byte[][] keys = Arrays.stream(terms.split("\n")).map(s -> s.getBytes(StandardCharsets.UTF_8)).toArray(byte[][]::new);
        for (byte[] k : keys) t.put(k, 0, k.length, value);
        for (byte[] k : keys) {
            if (t.get(k, 0, k.length) != value) throw new IllegalStateException("term lost");
        }
        return t.probes;
    }

    /** For tests: the size of the line buffer after reading the file with this bound. */
    public static long readerBufferBytes(String file, long maxLineBytes) throws IOException {
        long most = 0;
        try (LineReader r = new LineReader(file, new HashMap<>(), maxLineBytes, 64)) {
            while (r.next()) most = Math.max(most, r.bufferBytes());
        }
        return most;
    }

    /**
     * For tests, in one call: newline-separated lines in, one line out per line in: its terms
     * s, p, o, g, x joined by U+0001 (g and x empty when the line has none), or an empty line when
     * it is not a quad or a triple.
     */
    public static String terms(String lines) {
        StringBuilder out = new StringBuilder();
        Quad q = new Quad();
        for (String line : lines.split("\n", -1)) {
            byte[] bytes = line.getBytes(StandardCharsets.UTF_8);
            if (q.parse(bytes, 0, bytes.length)) {
                out.append(q.s()).append('\u0001').append(q.p()).append('\u0001').append(q.o()).append('\u0001')
                        .append(q.g0 < 0 ? "" : q.g()).append('\u0001').append(q.x0 < 0 ? "" : q.x());
            }
            out.append('\n');
        }
        return out.toString();
    }
}
