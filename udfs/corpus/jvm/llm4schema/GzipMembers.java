package llm4schema;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;
import java.util.zip.ZipException;

/**
 * Every member of a gzip file (RFC 1952), each checked, or an exception that says where the file
 * broke off.
 *
 * <p>Why not the JDK's {@link java.util.zip.GZIPInputStream}: after a member it looks for the next
 * header only when {@code available()} says more bytes are there (a remote stream may say 0), and
 * it takes a next header it cannot parse for the end of the file. A damaged second member then
 * ends the file early without a word. Here a member's end is followed by the end of the file, by
 * zero padding to the end (what gzip(1) accepts too, from tape blocks), or by the next member's
 * valid header; anything else is a {@link ZipException} naming the member and its byte offset.
 * The first member's errors keep the JDK's messages ("Not in GZIP format", "Unexpected end of
 * ZLIB input stream", "Corrupt GZIP trailer"), which the reject rows quote.
 */
final class GzipMembers extends InputStream {
    private static final int FHCRC = 2, FEXTRA = 4, FNAME = 8, FCOMMENT = 16;
    private final InputStream in;
    private final byte[] buf = new byte[1 << 16];
    private int pos, lim;     // buf[pos, lim): raw bytes read from in, not yet given to the inflater
    private long base;        // the file offset of buf[0]
    private final Inflater inf = new Inflater(true);
    private final CRC32 crc = new CRC32();
    private int member;       // 1-based number of the current member
    private long memberStart; // its header's file offset
    private boolean eof;

    GzipMembers(InputStream in) throws IOException {
        this.in = in;
        if (!header()) throw new EOFException("Unexpected end of gzip header: empty file");
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) return 0;
        while (!eof) {
            if (inf.finished()) {  // before needsInput: a member may end exactly at the end of its input
                pos = lim - inf.getRemaining();
                trailer();
                if (!header()) eof = true;
                continue;
            }
            if (inf.needsInput()) {
                if (pos == lim && !refill()) {
                    throw new EOFException("Unexpected end of ZLIB input stream" + where());
                }
                inf.setInput(buf, pos, lim - pos);
                pos = lim;
            }
            int n;
            try {
                n = inf.inflate(b, off, len);
            } catch (DataFormatException e) {
                throw new ZipException(e.getMessage() + where());
            }
            if (n > 0) {
                crc.update(b, off, n);
                return n;
            }
            if (inf.needsDictionary()) throw new ZipException("gzip member needs a preset dictionary" + where());
        }
        return -1;
    }

    /** " (member N at byte X)", for a member after the first; the first keeps the JDK's wording. */
    private String where() {
        return member > 1 ? " (gzip member " + member + " at byte " + memberStart + ")" : "";
    }

    /** The CRC-32 and size of the member that just ended. */
    private void trailer() throws IOException {
        long c = uint32(), size = uint32();
        if (c != crc.getValue() || size != (inf.getBytesWritten() & 0xffffffffL)) {
            throw new ZipException("Corrupt GZIP trailer" + where());
        }
    }

    /**
     * The next member's header; false at the end of the file (or zero padding to it). The first
     * member must be there; after it, bytes that are neither are damage.
     */
    private boolean header() throws IOException {
        long at = base + pos;
        int b0 = readByte();
        if (b0 < 0) return false;
        if (member > 0 && b0 == 0) {
            if (zerosToEnd()) return false;
            throw new ZipException("bytes other than zero padding after gzip member " + member + " (from byte " + at + ")");
        }
        int b1 = readByte();
        member++;
        memberStart = at;
        if (b0 != 0x1f || b1 != 0x8b) {
            throw new ZipException(member == 1 ? "Not in GZIP format"
                    : "bytes after gzip member " + (member - 1) + " (at byte " + at + ") are not a gzip member header");
        }
        if (need() != 8) throw new ZipException("Unsupported compression method" + where());
        int flags = need();
        for (int i = 0; i < 6; i++) need();  // mtime, xfl, os
        if ((flags & FEXTRA) != 0) {
            int n = need() | need() << 8;
            for (int i = 0; i < n; i++) need();
        }
        if ((flags & FNAME) != 0) while (need() != 0) { /* file name */ }
        if ((flags & FCOMMENT) != 0) while (need() != 0) { /* comment */ }
        if ((flags & FHCRC) != 0) {
            need();
            need();
        }
        inf.reset();
        crc.reset();
        return true;
    }

    /** Whether every byte left in the file is zero (reading them all). */
    private boolean zerosToEnd() throws IOException {
        for (int c; (c = readByte()) >= 0; ) {
            if (c != 0) return false;
        }
        return true;
    }

    private int need() throws IOException {
        int c = readByte();
        if (c < 0) throw new EOFException("Unexpected end of gzip header" + where());
        return c;
    }

    private long uint32() throws IOException {
        long v = 0;
        for (int i = 0; i < 4; i++) {
            int c = readByte();
            if (c < 0) throw new EOFException("Unexpected end of gzip trailer" + where());
            v |= (long) c << (8 * i);
        }
        return v;
    }

    private int readByte() throws IOException {
        if (pos == lim && !refill()) return -1;
        return buf[pos++] & 0xff;
    }

    private boolean refill() throws IOException {
        base += lim;
        pos = lim = 0;
        int r;
        do {
            r = in.read(buf, 0, buf.length);
        } while (r == 0);
        if (r < 0) return false;
        lim = r;
        return true;
    }

    @Override
    public void close() throws IOException {
        inf.end();
        in.close();
    }
}
