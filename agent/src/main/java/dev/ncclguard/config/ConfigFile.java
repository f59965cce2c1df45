package dev.ncclguard.config;

import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * The {@code config=PATH} option's file: options in Java properties format (UTF-8), one
 * {@code key=value} a line, so that a value may hold ',' (which separates the agent arguments).
 * Its values come last, after the agent arguments, system properties and environment (docs/spec.md).
 */
final class ConfigFile {
    private ConfigFile() {
    }

    /**
     * The file's options, each value without trailing white space (properties keep it, and an
     * invisible space would make "on " a bad value).
     *
     * @param keys the option keys a file may set ({@code config} is not one of them)
     * @throws OptionsException a line naming the file and what is wrong with it
     */
    static Map<String, String> read(String path, Collection<String> keys, String source) {
        Properties props = new Properties();
        byte[] bytes;
        try {
            // a regular file of at most 1 MiB, as bindings= and suppress= read theirs: a FIFO,
            // a device or standard input would block the start, or never end
            bytes = TextFile.read(Path.of(path));
        } catch (TextFile.Unusable e) {
            throw bad(path, source, e.missing ? "no such file"
                    : e.getMessage().startsWith("is a directory") ? "it is a directory" : "it " + e.getMessage());
        } catch (RuntimeException e) {
            throw bad(path, source, String.valueOf(e.getMessage())); // InvalidPathException
        }
        try {
            props.load(new StringReader(TextFile.decode(bytes)));
        } catch (TextFile.NotUtf8 e) {
            throw bad(path, source, "it is not UTF-8 text");
        } catch (IOException | RuntimeException e) {
            // IllegalArgumentException: a malformed \\uXXXX escape
            throw bad(path, source, String.valueOf(e.getMessage()));
        }
        Map<String, String> out = new HashMap<>();
        for (String key : props.stringPropertyNames()) {
            if (key.equals("config")) {
                throw bad(path, source, "option config cannot be set in a config file");
            }
            if (!keys.contains(key)) {
                throw bad(path, source, "unknown option '" + key + "' (valid: " + String.join(", ", keys) + ")");
            }
            out.put(key, props.getProperty(key).stripTrailing());
        }
        return out;
    }

    private static OptionsException bad(String path, String source, String why) {
        String from = source.equals("argument") ? "" : " (" + source + ")";
        return new OptionsException("ncclguard: invalid config file '" + path + "' for option config" + from + ": "
                + why + "; expected a readable properties file of key=value lines");
    }
}
