package dev.ncclguard.config;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;

/**
 * The agent's own input files (bindings, suppressions), read at start: regular files only (a FIFO
 * would block the start for ever, /dev/zero never end), at most {@link #MAX_BYTES}, strict UTF-8
 * with a fault named at its line and column. Each failure is one line for the option's message.
 */
public final class TextFile {
    /** Far above any real bindings or suppression file; /dev/zero-sized inputs stop here. */
    public static final int MAX_BYTES = 1 << 20;

    private TextFile() {
    }

    /** Why a file cannot be used, in words that follow its name: "is a FIFO, not a regular file". */
    public static final class Unusable extends Exception {
        private static final long serialVersionUID = 1L;
        /** The file does not exist at all. */
        public final boolean missing;

        Unusable(String message) {
            this(message, false);
        }

        Unusable(String message, boolean missing) {
            super(message, null, false, false);
            this.missing = missing;
        }
    }

    /** Bytes that are not UTF-8, where they are: line and column (in characters) count from 1. */
    public static final class NotUtf8 extends Exception {
        private static final long serialVersionUID = 1L;
        public final int line;
        public final int column;

        NotUtf8(int line, int column, int badByte) {
            super("line " + line + ", column " + column + ": not UTF-8 text (byte 0x"
                    + Integer.toHexString(0x100 | badByte).substring(1).toUpperCase(java.util.Locale.ROOT) + ")",
                    null, false, false);
            this.line = line;
            this.column = column;
        }
    }

    /** The file's lines, without their line ends. */
    public static List<String> lines(Path file) throws Unusable {
        byte[] bytes = read(file);
        try {
            String text = decode(bytes);
            return split(text.startsWith("\uFEFF") ? text.substring(1) : text); // a byte-order mark is no text
        } catch (NotUtf8 e) {
            throw new Unusable(e.getMessage());
        }
    }

    /** Reads a regular file of at most {@link #MAX_BYTES}, and no byte more. */
    static byte[] read(Path file) throws Unusable {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(file, BasicFileAttributes.class);
        } catch (NoSuchFileException e) {
            throw new Unusable("does not exist", true);
        } catch (AccessDeniedException e) {
            throw new Unusable("cannot be read: permission denied");
        } catch (IOException | RuntimeException e) {
            throw new Unusable("cannot be read: " + e.getMessage());
        }
        if (a.isDirectory()) {
            throw new Unusable("is a directory, not a file");
        }
        if (!a.isRegularFile()) {
            throw new Unusable("is " + kind(file) + ", not a regular file");
        }
        if (a.size() > MAX_BYTES) {
            throw new Unusable(tooLarge());
        }
        try (InputStream in = Files.newInputStream(file)) {
            // a file that grows while it is read is cut at the limit too
            byte[] bytes = in.readNBytes(MAX_BYTES + 1);
            if (bytes.length > MAX_BYTES) {
                throw new Unusable(tooLarge());
            }
            return bytes;
        } catch (AccessDeniedException e) {
            throw new Unusable("cannot be read: permission denied");
        } catch (IOException | RuntimeException e) {
            throw new Unusable("cannot be read: " + e.getMessage());
        }
    }

    private static String tooLarge() {
        return "is larger than " + (MAX_BYTES >> 20) + " MiB, the limit for this file";
    }

    /** Strict UTF-8; a fault at its line and column. */
    public static String decode(byte[] bytes) throws NotUtf8 {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes);
        CharBuffer out = CharBuffer.allocate(bytes.length + 1);
        CoderResult r = decoder.decode(in, out, true);
        if (!r.isError()) {
            r = decoder.flush(out);
        }
        if (r.isError()) {
            // what decoded before the fault places it
            int at = in.position();
            out.flip();
            int line = 1;
            int column = 1;
            for (int i = 0; i < out.limit(); i++) {
                char c = out.get(i);
                boolean crlf = c == '\r' && i + 1 < out.limit() && out.get(i + 1) == '\n';
                if ((c == '\n' || c == '\r') && !crlf) {
                    line++;
                    column = 1;
                } else if (!crlf) {
                    column++;
                }
            }
            throw new NotUtf8(line, column, bytes[at] & 0xFF);
        }
        out.flip();
        return out.toString();
    }

    /** Lines split at \n, \r\n or \r, as BufferedReader splits them. */
    static List<String> split(String text) {
        List<String> lines = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '\n' || c == '\r') {
                lines.add(text.substring(start, i));
                if (c == '\r' && i + 1 < text.length() && text.charAt(i + 1) == '\n') {
                    i++;
                }
                start = i + 1;
            }
        }
        if (start < text.length()) {
            lines.add(text.substring(start));
        }
        return lines;
    }

    /** "a FIFO", "a character device", ...: what a path that is no regular file is, from its mode. */
    public static String kind(Path path) {
        try {
            int mode = (Integer) Files.getAttribute(path, "unix:mode");
            switch (mode & 0170000) {
                case 0010000:
                    return "a FIFO";
                case 0020000:
                    return "a character device";
                case 0060000:
                    return "a block device";
                case 0140000:
                    return "a socket";
                case 0040000:
                    return "a directory";
                case 0100000:
                    return "a regular file";
                default:
                    return "a special file";
            }
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
            return "a special file";
        }
    }
}
