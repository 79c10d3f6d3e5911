package llm4schema;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;

/**
 * The lines of one input file, decompressed, read straight from Hadoop's FileSystem and handed out
 * as byte ranges of one buffer.
 *
 * <p>Why not Spark's text source: it costs about 2.4 CPU-seconds per million WDC lines on these
 * machines (Hadoop's line reader, a copy into an UnsafeRow, a Java String per row and per file
 * name), four times {@code zcat}. Why bytes, not Strings: decoding every line to UTF-16 and
 * comparing the page and subject terms of each quad as Strings was a third of the scan's CPU; the
 * scan parses the bytes (every N-Quads delimiter is ASCII, and no byte of a multi-byte UTF-8
 * character is ASCII) and decodes only the terms it keeps. A {@code .gz} file goes through
 * {@link GzipMembers} (zlib, every member of a multi-member file checked: the JDK's GZIPInputStream
 * takes a damaged later member for the end of the file), other codecs through Hadoop's factory by
 * extension. A line ends at LF; a CR before it is dropped. A UTF-8 byte order mark as the file's
 * first bytes is skipped ({@link #byteOrderMark}), as udfs/runtime/lines.py does.
 *
 * <p>A line longer than {@code maxLineBytes} (without its terminator) is not buffered: the reader
 * keeps its first {@code sampleBytes} and skips to the next LF, so one line cannot exhaust a
 * task's memory (the buffer stays under twice the bound); {@link #tooLong} then says so.
 */
final class LineReader implements Closeable {
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long LFS = 0x0a0a0a0a0a0a0a0aL, ONES = 0x0101010101010101L, HIGHS = 0x8080808080808080L;
    private final InputStream in;
    private byte[] buf = new byte[1 << 18];
    private int pos, end;
    private int lineStart, lineEnd;
    private boolean eof, nonAscii;
    private boolean started, byteOrderMark;
    private final long maxLine;
    private final int sampleBytes;
    private boolean tooLong;
    private long longBytes;
    private byte[] sample = new byte[0];

    /** The file could not be opened (no file system for its scheme, not found, not readable). */
    static final class CannotOpen extends IOException {
        private static final long serialVersionUID = 1L;

        CannotOpen(String message, Throwable cause) {
            super(message, cause);
        }
    }

    LineReader(String file, Map<String, String> hadoopConf, long maxLineBytes, int sampleBytes) throws IOException {
        this.maxLine = maxLineBytes;
        this.sampleBytes = sampleBytes;
        Configuration conf = new Configuration(false);
        for (Map.Entry<String, String> e : hadoopConf.entrySet()) conf.set(e.getKey(), e.getValue());
        Path path = new Path(file);
        FileSystem fs;
        try {
            fs = path.getFileSystem(conf);
        } catch (IOException | RuntimeException e) {  // a scheme without its connector: Hadoop throws unchecked
            throw new CannotOpen("no file system for " + path.toUri().getScheme() + ": " + e.getMessage(), e);
        }
        // The local file system's checksum layer opens a ".name.crc" beside the file through a
        // path parsed from a string, which fails for a name with a colon ("a:b.nq": "Relative path
        // in absolute URI"); an input has no checksum file to verify, so the raw file is read.
        if (fs instanceof LocalFileSystem) fs = ((LocalFileSystem) fs).getRawFileSystem();
        InputStream raw;
        try {
            raw = fs.open(path);
        } catch (IOException e) {
            throw new CannotOpen(e.getClass().getSimpleName() + ": " + e.getMessage(), e);
        }
        try {
            if (file.endsWith(".gz")) {
                in = new GzipMembers(raw);
            } else {
                CompressionCodec codec = new CompressionCodecFactory(conf).getCodec(path);
                in = codec == null ? raw : codec.createInputStream(raw);
            }
        } catch (IOException | RuntimeException e) {
            raw.close();
            throw e;
        }
    }

    /** The current line's bytes are {@code buf()[start(), end())}: valid until the next call of {@link #next}. */
    byte[] buf() { return buf; }
    int start() { return lineStart; }
    int end() { return lineEnd; }

    /** Whether the file began with a UTF-8 byte order mark (EF BB BF), which no line holds. */
    boolean byteOrderMark() { return byteOrderMark; }

    /** Whether the current line has a byte outside ASCII (then it may not be valid UTF-8). */
    boolean nonAscii() { return nonAscii; }

    /** Whether the current line is longer than the bound: its bytes are not kept, only a sample. */
    boolean tooLong() { return tooLong; }

    /** The length in bytes of the current line when {@link #tooLong}. */
    long longBytes() { return longBytes; }

    /** The first bytes of a line that is {@link #tooLong}, decoded (a character cut at the end dropped). */
    String sampleText() {
        String s = new String(sample, StandardCharsets.UTF_8);
        return sample.length < longBytes && s.endsWith("\uFFFD") ? s.substring(0, s.length() - 1) : s;
    }

    /** The size of the line buffer now (a test hook: it must stay near the bound, not the longest line). */
    int bufferBytes() { return buf.length; }

    /** The current line decoded; invalid UTF-8 becomes U+FFFD. */
    String text() {
        return new String(buf, lineStart, lineEnd - lineStart, StandardCharsets.UTF_8);
    }

    /** Advances to the next line (without its terminator); false at the end of the file. */
    boolean next() throws IOException {
        tooLong = false;
        if (!started) {
            // A byte order mark as the file's first bytes is no part of line 1 (udfs/runtime/lines.py):
            // skipped and told by byteOrderMark(). Anywhere else it is a character of its line.
            started = true;
            while (end - pos < 3 && !eof) fill();
            if (end - pos >= 3 && buf[pos] == (byte) 0xef && buf[pos + 1] == (byte) 0xbb && buf[pos + 2] == (byte) 0xbf) {
                pos += 3;
                byteOrderMark = true;
            }
        }
        int scanned = pos;
        long high = 0;  // the line's bytes or'ed: bit 7 of a byte set when one is outside ASCII
        while (true) {
            int i = scanned;
            // Eight bytes at a time while none is a LF (the usual has-zero-byte test on word ^ LFs).
            while (i + 8 <= end) {
                long w = (long) LONGS.get(buf, i), x = w ^ LFS;
                if (((x - ONES) & ~x & HIGHS) != 0) break;
                high |= w;
                i += 8;
            }
            for (; i < end; i++) {
                byte c = buf[i];
                if (c == '\n') {
                    setLine(pos, i, high);
                    pos = i + 1;
                    return true;
                }
                high |= c;
            }
            if (eof) {
                if (pos == end) return false;
                setLine(pos, end, high);  // a last line without LF
                pos = end;
                return true;
            }
            if (end - pos > maxLine + 1) {  // no LF within the bound (+ 1: a CR before the LF is not the line's)
                skipLongLine();
                return true;
            }
            int done = end - pos;
            fill();
            scanned = pos + done;
        }
    }

    private void setLine(int from, int to, long high) {
        if (to > from && buf[to - 1] == '\r') to--;
        if (to - from > maxLine) {
            keepSample(from, to);
            markLong(to - from);
            return;
        }
        lineStart = from;
        lineEnd = to;
        nonAscii = (high & HIGHS) != 0;
    }

    /** The rest of a line over the bound, from {@code pos}: its first bytes kept, the others skipped. */
    private void skipLongLine() throws IOException {
        keepSample(pos, end);
        long n = end - pos;
        byte last = buf[end - 1];
        pos = end;
        while (true) {
            if (pos == end) {
                if (eof) break;
                fill();  // nothing unread is kept: the buffer does not grow
                continue;
            }
            int i = pos;
            while (i < end && buf[i] != '\n') i++;
            n += i - pos;
            if (i > pos) last = buf[i - 1];
            if (i < end) {
                pos = i + 1;
                break;
            }
            pos = end;
        }
        markLong(last == '\r' ? n - 1 : n);
    }

    private void keepSample(int from, int to) {
        sample = Arrays.copyOfRange(buf, from, from + (int) Math.min(sampleBytes, to - from));
    }

    private void markLong(long bytes) {
        tooLong = true;
        longBytes = bytes;
        lineStart = lineEnd = 0;
        nonAscii = false;
    }

    /** Moves the unread bytes to the front (growing the buffer for a long line) and reads more. */
    private void fill() throws IOException {
        int n = end - pos;
        if (pos > 0) {
            System.arraycopy(buf, pos, buf, 0, n);
        } else if (n == buf.length) {
            buf = Arrays.copyOf(buf, buf.length * 2);
        }
        pos = 0;
        end = n;
        int r = in.read(buf, end, buf.length - end);
        if (r < 0) eof = true;
        else end += r;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
