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
import java.util.zip.GZIPInputStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
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
 * character is ASCII) and decodes only the terms it keeps. A {@code .gz} file goes through the
 * JDK's {@link GZIPInputStream} (zlib, every member of a multi-member file), other codecs through
 * Hadoop's factory by extension. A line ends at LF; a CR before it is dropped.
 */
final class LineReader implements Closeable {
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long LFS = 0x0a0a0a0a0a0a0a0aL, ONES = 0x0101010101010101L, HIGHS = 0x8080808080808080L;
    private final InputStream in;
    private byte[] buf = new byte[1 << 18];
    private int pos, end;
    private int lineStart, lineEnd;
    private boolean eof, nonAscii;

    LineReader(String file, Map<String, String> hadoopConf) throws IOException {
        Configuration conf = new Configuration(false);
        for (Map.Entry<String, String> e : hadoopConf.entrySet()) conf.set(e.getKey(), e.getValue());
        Path path = new Path(file);
        FileSystem fs = path.getFileSystem(conf);
        InputStream raw = fs.open(path);
        try {
            if (file.endsWith(".gz")) {
                in = new GZIPInputStream(raw, 1 << 16);
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

    /** Whether the current line has a byte outside ASCII (then it may not be valid UTF-8). */
    boolean nonAscii() { return nonAscii; }

    /** The current line decoded; invalid UTF-8 becomes U+FFFD. */
    String text() {
        return new String(buf, lineStart, lineEnd - lineStart, StandardCharsets.UTF_8);
    }

    /** Advances to the next line (without its terminator); false at the end of the file. */
    boolean next() throws IOException {
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
            int done = end - pos;
            fill();
            scanned = pos + done;
        }
    }

    private void setLine(int from, int to, long high) {
        if (to > from && buf[to - 1] == '\r') to--;
        lineStart = from;
        lineEnd = to;
        nonAscii = (high & HIGHS) != 0;
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
